// Installing a package the way its users will, offline: an app's package-lock.json is written from this checkout's
// lock (each package at the version and integrity pinned here), so `npm ci --offline` takes everything from the
// npm cache that this checkout's own `npm ci` filled, and the package under test from its packed tarball.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../cluster/paths.ts';

const run = promisify(execFile);

interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  [field: string]: unknown;
}

interface Manifest {
  name: string;
  version: string;
  type?: 'module' | 'commonjs';
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** `npm pack` of this checkout, without its lifecycle scripts (the build is already there): the tarball's path. */
export async function packCheckout(destination: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination],
    { cwd: repoRoot });
  return join(destination, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
}

/** Where node would find `name` from the package at `from` (a lock path), among `packages`. */
function locate(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dir.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, '')) {
    const path = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (packages[path]) return path;
    if (!dir) return undefined;
  }
}

/**
 * Writes package.json and package-lock.json into `dir` for `app`, with `tarball` (a packed package) among its
 * dependencies, and runs `npm ci --offline` there.
 */
export async function installOffline(dir: string, app: Manifest, tarball: string): Promise<void> {
  const lock = JSON.parse(await readFile(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json']);
  const packed = JSON.parse(stdout) as Manifest;
  const packages: Record<string, LockEntry> = { ...lock.packages };
  const packedPath = `node_modules/${packed.name}`;
  packages[packedPath] = { version: packed.version, resolved: `file:${basename(tarball)}`,
    dependencies: packed.dependencies, peerDependencies: packed.peerDependencies };

  const wanted = { ...app.dependencies, ...app.devDependencies, [packed.name]: `file:${basename(tarball)}` };
  const chosen: Record<string, LockEntry> = {};
  const visit = (path: string) => {
    if (chosen[path]) return;
    const { dev: _d, devOptional: _o, peer: _p, ...entry } = packages[path]!;
    chosen[path] = entry;
    // Bundled dependencies come inside their package's tarball, listed under its path.
    for (const nested of Object.keys(packages)) if (nested.startsWith(`${path}/node_modules/`)) visit(nested);
    const needs = { ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies };
    for (const name of Object.keys(needs)) {
      const found = locate(packages, path, name);
      if (found) visit(found);
      // Optional dependencies of other platforms, and peers a package can do without, may be missing.
      else if (entry.dependencies?.[name]) throw new Error(`${name}, needed by ${path}, is not in the checkout's lock`);
    }
  };
  for (const name of Object.keys(wanted)) {
    const path = `node_modules/${name}`;
    if (!packages[path]) throw new Error(`${name} is not in the checkout's lock, so it cannot be installed offline`);
    visit(path);
  }
  const dependencies = { ...app.dependencies, [packed.name]: `file:${basename(tarball)}` };
  const manifest = { ...app, dependencies };
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  await writeFile(join(dir, 'package-lock.json'), JSON.stringify({ name: app.name, version: app.version, lockfileVersion: 3,
    requires: true, packages: { '': { name: app.name, version: app.version, dependencies,
      devDependencies: app.devDependencies }, ...chosen } }, null, 2));
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, timeout: 5 * 60_000 });
}

/** The oldest Node 22 release package.json's engines allow: the package is tested under it besides the pinned Node 24. */
export const nodeLts22 = '22.15.0';

/** The directory holding `node` of that release, installed from the npm registry once and kept in the cache. */
export async function nodeRelease(version: string): Promise<string> {
  const dir = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'keelson', 'nodejs', version);
  const bin = join(dir, 'node_modules/node/bin');
  if (existsSync(join(bin, 'node'))) return bin;
  const staging = `${dir}.partial.${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, 'package.json'), JSON.stringify({ private: true, allowScripts: { node: true } }));
  await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error', `node@${version}`],
    { cwd: staging, timeout: 5 * 60_000 });
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return bin;
}
