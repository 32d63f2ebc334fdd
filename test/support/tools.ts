import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../cluster/paths.ts';

/** The path of a pinned Go tool from test/tools (helm, promtool, actionlint), built on first use (minutes, once). */
export async function goTool(name: string): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [join(repoRoot, 'test/tools/build.sh'), name],
    { timeout: 20 * 60_000 });
  return stdout.trim();
}
