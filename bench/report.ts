// The benchmark's output: a markdown table of medians with their spread and Keelson's ratios to each peer, and an
// SVG chart of the same figures.
import type { Results } from './scenarios.ts';
import { summarize } from './stats.ts';

export const contenderOrder = ['keelson', 'controller-runtime', 'kopf', 'floor'];

function format(value: number): string {
  if (!Number.isFinite(value)) return '—';
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude < 1) return value.toPrecision(2);
  return magnitude >= 100 ? value.toFixed(0) : magnitude >= 10 ? value.toFixed(1) : value.toFixed(2);
}

function ratio(keelson: number | undefined, peer: number | undefined): string {
  if (keelson === undefined || peer === undefined) return '—';
  if (peer === 0) return keelson === 0 ? '1' : '—';
  return `${format(keelson / peer)}×`;
}

export interface Context {
  command: string;
  versions: string[];
  machine: string;
  date: string;
  /** What did not finish, and why: a missing figure is explained here, never left blank. */
  notes: string[];
}

export function markdown(results: Results, context: Context): string {
  const header = ['metric', ...contenderOrder.map((c) => `${c} median (min–max)`), 'K/controller-runtime', 'K/kopf', 'K/floor'];
  const rows = [...results].map(([metric, row]) => {
    const medians = new Map([...row].map(([who, values]) => [who, summarize(values).median]));
    const cells = contenderOrder.map((who) => {
      const values = row.get(who);
      if (!values) return '—';
      const { median, min, max } = summarize(values);
      return values.length > 1 ? `${format(median)} (${format(min)}–${format(max)})` : format(median);
    });
    const k = medians.get('keelson');
    return [metric, ...cells, ratio(k, medians.get('controller-runtime')), ratio(k, medians.get('kopf')), ratio(k, medians.get('floor'))];
  });
  const table = [header, header.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
  return [
    '# Keelson benchmark: TDSet against controller-runtime, kopf and the bare API floor',
    '',
    `Run on ${context.date} with \`${context.command}\`.`,
    '',
    `Machine: ${context.machine}.`,
    '',
    'Versions:',
    ...context.versions.map((v) => `- ${v}`),
    '',
    'Lower is better everywhere. Ratios are of medians; a ratio below 1× means Keelson used less. API requests are',
    'counted from the apiserver\'s `apiserver_request_total` for tdsets, deployments and events, less the',
    'benchmark\'s own creates. CPU and memory are read from /proc for the controller process, and for the',
    'apiserver in each burst (with the benchmark\'s own requests in it, the same for all). The floor is the',
    'benchmark making the necessary writes itself, with no watches, so it has no process and no reads.',
    '',
    table,
    '',
    ...(context.notes.length ? ['Notes:', ...context.notes.map((n) => `- ${n}`), ''] : []),
    '![chart](chart.svg)',
    '',
  ].join('\n');
}

const palette: Record<string, string> = { keelson: '#2f6fdf', 'controller-runtime': '#00a08a', kopf: '#e8a33d', floor: '#8c8c8c' };

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One group of horizontal bars per metric, each scaled to that metric's largest median. */
export function chart(results: Results): string {
  const barHeight = 14;
  const labelWidth = 300;
  const plotWidth = 420;
  const lines: string[] = [];
  let y = 30;
  for (const [metric, row] of results) {
    const medians = contenderOrder.filter((who) => row.has(who)).map((who) => [who, summarize(row.get(who)!).median] as const);
    const largest = Math.max(...medians.map(([, m]) => m), 0);
    lines.push(`<text x="10" y="${y + 11}" font-weight="bold">${escape(metric)}</text>`);
    y += 16;
    for (const [who, median] of medians) {
      const width = largest > 0 ? Math.max(1, (median / largest) * plotWidth) : 1;
      lines.push(`<text x="${labelWidth - 8}" y="${y + 11}" text-anchor="end">${who}</text>`,
        `<rect x="${labelWidth}" y="${y}" width="${width.toFixed(1)}" height="${barHeight}" fill="${palette[who]}"/>`,
        `<text x="${labelWidth + width + 6}" y="${y + 11}">${format(median)}</text>`);
      y += barHeight + 4;
    }
    y += 10;
  }
  const height = y + 10;
  return [`<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + plotWidth + 90}" height="${height}" ` +
    `font-family="sans-serif" font-size="12">`,
  `<rect width="100%" height="100%" fill="white"/>`,
  `<text x="10" y="18" font-size="14" font-weight="bold">TDSet: Keelson, controller-runtime, kopf, floor (medians; lower is better)</text>`,
  ...lines, '</svg>', ''].join('\n');
}
