// A real Alertmanager (pinned, built from its Go module) on loopback, for PodAlert's tests: what it holds is read
// through its v2 API, and its one receiver is a webhook of the test's choosing.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../cluster/ports.ts';
import { waitFor } from '../../cluster/wait.ts';
import { goTool } from './tools.ts';

export interface Alertmanager {
  url: string;
  /** The alerts it holds that have not ended: active, silenced or inhibited. */
  alerts(): Promise<any[]>;
  /** Silences what `matchers` (label: value) select for an hour; resolves with the silence's id. */
  silence(matchers: Record<string, string>): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Alertmanager sending every group at once (group_wait and group_interval 1s), and resolutions, to `receiverUrl`;
 * a group still firing again after `repeatInterval` (default 1h).
 */
export async function startAlertmanager(receiverUrl: string, { repeatInterval = '1h' } = {}): Promise<Alertmanager> {
  const binary = await goTool('alertmanager');
  const scratch = await mkdtemp(join(tmpdir(), 'keelson-alertmanager-'));
  const config = join(scratch, 'alertmanager.yml');
  await writeFile(config, JSON.stringify({
    route: { receiver: 'hook', group_by: ['alertname', 'namespace', 'owner_kind', 'owner', 'pod'], group_wait: '1s',
      group_interval: '1s', repeat_interval: repeatInterval },
    receivers: [{ name: 'hook', webhook_configs: [{ url: receiverUrl, send_resolved: true }] }],
  }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const output: string[] = [];
  const child: ChildProcess = spawn(binary, [`--config.file=${config}`, `--storage.path=${join(scratch, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address=', '--log.level=warn'],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk) => output.push(String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
    await rm(scratch, { recursive: true, force: true });
  };
  try {
    await waitFor('Alertmanager ready', async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok,
      { timeoutMs: 30_000 });
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}: ${output.join('').slice(-2000)}`);
  }
  return {
    url,
    alerts: async () => (await fetch(`${url}/api/v2/alerts`)).json() as Promise<any[]>,
    silence: async (matchers) => {
      const now = Date.now();
      const response = await fetch(`${url}/api/v2/silences`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ matchers: Object.entries(matchers).map(([name, value]) => ({ name, value, isRegex: false,
          isEqual: true })), startsAt: new Date(now).toISOString(), endsAt: new Date(now + 3_600_000).toISOString(),
        createdBy: 'keelson tests', comment: 'quiet' }) });
      if (!response.ok) throw new Error(`silence refused: HTTP ${response.status} ${await response.text()}`);
      return ((await response.json()) as { silenceID: string }).silenceID;
    },
    stop,
  };
}

export interface Gate {
  /** Where to post instead of the Alertmanager's own URL. */
  url: string;
  /** While shut, every request is answered 503, as by an Alertmanager that is down. */
  shut(): void;
  open(): void;
  stop(): Promise<void>;
}

/** A loopback gate in front of `target`: requests pass while it is open. */
export async function startGate(target: string): Promise<Gate> {
  let shut = false;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', async () => {
      if (shut) return res.writeHead(503).end();
      const answer = await fetch(`${target}${req.url}`, { method: req.method, headers: { 'Content-Type': 'application/json' },
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) }).catch(() => undefined);
      res.writeHead(answer?.status ?? 502).end(answer ? await answer.text() : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, shut: () => { shut = true; },
    open: () => { shut = false; }, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
