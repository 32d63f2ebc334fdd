// `node build/bench/profile.js DIR [N]`: where the CPU went in the V8 profiles `npm run bench -- --profile DIR`
// wrote, as self time by package (or Keelson's own code, Node's modules, the garbage collector) and by function.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The parts of V8's .cpuprofile format read here. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTimes {
  totalMs: number;
  byPackage: Map<string, number>;
  byFunction: Map<string, number>;
}

/** Where a function's code lives: a package, Keelson, a module of Node's, native code, or what V8 names it (GC). */
function ownerOf(url: string, functionName: string): string {
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (module) return module[1]!;
  if (url.startsWith('node:')) return url;
  if (url.includes('/build/')) return 'keelson';
  if (url) return 'other';
  return functionName.startsWith('(') ? functionName : 'native';
}

/** Self time (ms) of every sample's function, summed over `profiles`, idle time left out. */
export function selfTimes(profiles: readonly CpuProfile[]): SelfTimes {
  const times: SelfTimes = { totalMs: 0, byPackage: new Map(), byFunction: new Map() };
  const add = (map: Map<string, number>, key: string, ms: number) => map.set(key, (map.get(key) ?? 0) + ms);
  for (const profile of profiles) {
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    profile.samples.forEach((id, i) => {
      const frame = frames.get(id)!;
      if (frame.functionName === '(idle)') return;
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      const where = frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/build\//, '');
      times.totalMs += ms;
      add(times.byPackage, ownerOf(frame.url, frame.functionName), ms);
      add(times.byFunction, `${frame.functionName || '(anonymous)'}${where ? ` ${where}:${frame.lineNumber + 1}` : ''}`, ms);
    });
  }
  return times;
}

function table(map: Map<string, number>, totalMs: number, rows: number): string {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)
    .map(([name, ms]) => `${ms.toFixed(0).padStart(8)} ms ${((100 * ms) / totalMs).toFixed(1).padStart(5)}%  ${name}`)
    .join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir, rows = '30'] = process.argv.slice(2);
  if (!dir) throw new Error('usage: node build/bench/profile.js DIR [ROWS]');
  const profiles = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile);
  const times = selfTimes(profiles);
  console.log(`${profiles.length} profiles, ${times.totalMs.toFixed(0)} ms on CPU\n\nby package:\n` +
    `${table(times.byPackage, times.totalMs, 20)}\n\nby function:\n${table(times.byFunction, times.totalMs, Number(rows))}`);
}
