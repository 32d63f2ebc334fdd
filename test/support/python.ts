// Python tools the tests and the benchmark run, each in a virtual environment of its own, made from a requirements
// file that pins every package (installed with --no-deps, so nothing floats) and cached under the file's hash.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where the environment for `requirements` lives, made or not. */
export function environmentPath(name: string, requirements: string): string {
  const hash = createHash('sha256').update(readFileSync(requirements)).digest('hex').slice(0, 12);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'keelson', 'python', `${name}-${hash}`);
}

/** The environment for `requirements`, made from the package index the first time. */
export async function pythonEnvironment(name: string, requirements: string): Promise<string> {
  const venv = environmentPath(name, requirements);
  // Written last: an environment without it is an interrupted install, made again.
  const complete = join(venv, '.complete');
  if (existsSync(complete)) return venv;
  await rm(venv, { recursive: true, force: true });
  await run('python3', ['-m', 'venv', venv]);
  await run(join(venv, 'bin/pip'), ['install', '--quiet', '--no-deps', '-r', requirements],
    { maxBuffer: 16 << 20, timeout: 10 * 60_000 });
  await writeFile(complete, '');
  return venv;
}
