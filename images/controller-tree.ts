// The operator image bundles the compiled controller tree as a closed whole (bundle.ts). Tests and type declarations
// stay out, and so does every module that imports from outside the tree: smoke tests and `npm start` reach into
// test/, samples into imports/. The image never loads them; bundle.ts removes them with this before bundling.
import { readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';

/** The relative specifiers of a compiled module's imports, static and dynamic. */
export function relativeImports(source: string): { static: string[]; dynamic: string[] } {
  const of = (pattern: RegExp) => [...source.matchAll(pattern)].map((m) => m[1]!).filter((s) => s.startsWith('.'));
  return { static: of(/^\s*(?:import|export)\b[^'"()]*?\bfrom\s*['"]([^'"]+)['"]/gm),
    dynamic: of(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g) };
}

/** Whether a file under `dir` stays out of the image (a source map goes with its module). */
export async function staysOut(dir: string, path: string): Promise<boolean> {
  const module = path.replace(/\.map$/, '');
  // Type declarations are for the package's users; the image runs code.
  if (module.endsWith('.test.js') || module.endsWith('.d.ts')) return true;
  if (!module.endsWith('.js')) return false;
  const { static: eager, dynamic } = relativeImports(await readFile(module, 'utf8'));
  return [...eager, ...dynamic].some((specifier) => !resolve(dirname(module), specifier).startsWith(dir + sep));
}

/**
 * Removes what stays out of the image from `dir`, and what imports it statically (a smoke test built on another's);
 * returns their paths, relative to `dir`.
 */
export async function removeOutsiders(dir: string): Promise<string[]> {
  const root = resolve(dir);
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const paths = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  const out = new Set((await Promise.all(paths.map(async (path) => (await staysOut(root, path)) ? path : undefined)))
    .filter((path) => path !== undefined));
  // Static imports only: a module that may load a left-out one on demand (an entry's smoke test) is still whole.
  const imports = new Map(await Promise.all(paths.filter((p) => p.endsWith('.js') && !out.has(p)).map(async (path) =>
    [path, relativeImports(await readFile(path, 'utf8')).static.map((specifier) => resolve(dirname(path), specifier))] as const)));
  for (let grew = true; grew;) {
    grew = false;
    for (const [path, targets] of imports) {
      if (out.has(path) || !targets.some((t) => out.has(t))) continue;
      out.add(path).add(`${path}.map`);
      grew = true;
    }
  }
  const removed = paths.filter((path) => out.has(path));
  await Promise.all(removed.map((path) => rm(path)));
  return removed.map((path) => path.slice(root.length + 1)).sort();
}

