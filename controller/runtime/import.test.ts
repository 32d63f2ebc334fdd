// The runtime as a library: importing it reads no environment variable and installs no process-wide handler. Only
// a program's own entry point (run.ts's runController, when called) does either.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { it } from 'node:test';

const run = promisify(execFile);
const here = fileURLToPath(new URL('.', import.meta.url));

it('reads no environment variable and installs no process handler when imported', async () => {
  const modules = (await readdir(here)).filter((f) => f.endsWith('.js') && !f.endsWith('.test.js')).map((f) => join(here, f));
  // The packages come first, unwatched: what they read at import is theirs, not the runtime's.
  const packages = new Set<string>();
  for (const module of modules) {
    for (const [, specifier] of (await readFile(module, 'utf8')).matchAll(/\bfrom\s*'([^'.][^']*)'/g)) packages.add(specifier!);
  }
  const script = `
    for (const p of ${JSON.stringify([...packages])}) await import(p);
    const read = new Set();
    process.env = new Proxy(process.env, { get(env, key) { if (typeof key === 'string') read.add(key); return env[key]; } });
    const handlers = () => Object.fromEntries(process.eventNames().map((e) => [String(e), process.listenerCount(e)]));
    // What Node's own module loader reads (coverage, --watch and source-map settings) is not the runtime's.
    await import('data:text/javascript,export default 0');
    const loader = new Set([...read, 'NODE_V8_COVERAGE']);
    const before = handlers();
    for (const m of ${JSON.stringify(modules.map((m) => pathToFileURL(m).href))}) await import(m);
    console.log(JSON.stringify({ read: [...read].filter((k) => !loader.has(k)), before, after: handlers() }));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: here });
  const { read, before, after } = JSON.parse(stdout);
  assert.ok(modules.length > 20, `only ${modules.length} runtime modules found`);
  assert.deepEqual(read, [], 'environment variables read at import');
  assert.deepEqual(after, before, 'process handlers installed at import');
});
