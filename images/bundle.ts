// The controller as the image runs it: one esbuild bundle of the compiled, closed controller tree (controller-tree.ts),
// split at its dynamic imports so that an operator left disabled is never read. Node then resolves and compiles a
// handful of files instead of some 300 modules and their packages: start-up and resident memory
// (bench/results/before-after/bundle.md). `node build/images/bundle.js TREE` closes the compiled controller tree
// TREE and bundles the image's entries of it into TREE/bundle, the code they share in chunks beside them.
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, version, type Plugin } from 'esbuild';
import { removeOutsiders } from './controller-tree.ts';
import { generatedIndex, kubeConfigModule, slimIndex } from '../controller/runtime/kubeconfig.ts';

const clientNodeModule = /[/\\]@kubernetes[/\\]client-node[/\\]dist[/\\]/;
const leftOutTransports = fileURLToPath(new URL('./left-out-transports.js', import.meta.url));

/**
 * client-node's KubeConfig module takes two names from the generated API clients' index, which loads every client;
 * controller/runtime/kubeconfig.ts redirects that import at run time, and the bundle does it here. The transports of
 * client-node's fetch path and proxy agents, which the controller never runs, give way to left-out-transports.ts.
 */
const slimKubeConfig: Plugin = {
  name: 'slim-kubeconfig',
  setup(bundle) {
    bundle.onResolve({ filter: /^\.\/gen\/index\.js$/ }, ({ path, importer }) =>
      path === generatedIndex && kubeConfigModule.test(importer) ? { path: fileURLToPath(slimIndex) } : undefined);
    bundle.onResolve({ filter: /^(undici|socks|socks-proxy-agent|hpagent)$/ }, ({ importer }) =>
      clientNodeModule.test(importer) ? { path: leftOutTransports } : undefined);
  },
};

/** What the closed tree left out (a smoke test, a sample) stays a dynamic import the controller never makes. */
const leftOut = (removed: Set<string>): Plugin => ({
  name: 'left-out',
  setup(bundle) {
    bundle.onResolve({ filter: /^\./ }, ({ path, resolveDir, kind }) =>
      kind === 'dynamic-import' && removed.has(resolve(resolveDir, path)) ? { path, external: true } : undefined);
  },
});

/** The image's entry points, in the controller tree: the controller, and the agent PostgreSQL members run. */
export const imageEntries = ['main.js', 'operators/postgrescluster/agent-main.js'];

/** Where the image's bundle sits in its controller tree: at the depth of the tree's own folders (release.ts). */
export const bundleFolder = 'bundle';

/**
 * Bundles each of `entries` into `outdir` (emptied first), with the packages of this checkout's node_modules wherever
 * the entries sit; a dynamic import of a module in `removed` stays one. Returns the bundler's name and version.
 */
export async function bundleController(entries: string[], outdir: string, removed: string[] = []): Promise<string> {
  // esbuild resolves relative paths against absWorkingDir, not the process's working directory.
  outdir = resolve(outdir);
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  await build({
    entryPoints: entries.map((entry) => resolve(entry)), outdir, entryNames: '[name]', bundle: true, splitting: true, format: 'esm', platform: 'node',
    // Paths in the bundle's comments are relative to the tree, wherever it sits: the image stays reproducible.
    absWorkingDir: resolve(outdir, '..'), target: 'node22', nodePaths: [fileURLToPath(new URL('../../node_modules', import.meta.url))],
    // Not minified: stack traces keep their names, and the source maps (mappings alone) lead back to the TypeScript.
    sourcemap: true, sourcesContent: false, logLevel: 'warning', plugins: [slimKubeConfig, leftOut(new Set(removed))],
    // CommonJS packages inside an ES module bundle still call require() for Node's built-in modules.
    banner: { js: 'import { createRequire as createRequireForBundle } from \'node:module\'; ' +
      'const require = createRequireForBundle(import.meta.url);' },
  });
  return `esbuild ${version}`;
}

/**
 * Closes the compiled controller tree `tree` (controller-tree.ts) and bundles the image's entries of it into its
 * bundle folder; returns that folder.
 */
export async function bundleImageEntries(tree: string): Promise<string> {
  tree = resolve(tree);
  const removed = (await removeOutsiders(tree)).map((path) => join(tree, path));
  const outdir = join(tree, bundleFolder);
  await bundleController(imageEntries.map((entry) => join(tree, entry)), outdir, removed);
  return outdir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [tree] = process.argv.slice(2);
  if (!tree) throw new Error('usage: node build/images/bundle.js TREE');
  console.log(`bundled ${imageEntries.join(' and ')} into ${await bundleImageEntries(tree)}`);
}
