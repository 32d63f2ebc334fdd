// The Prometheus JMX exporter's Java agent, pinned: the operator copies this exact jar into containers. The image
// fetches it at build time (Dockerfile); tests and `npm start` fetch it into the user's cache. Either way the bytes
// are checked against the pinned digest before use.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export const agentArtifact = {
  coordinates: 'io.prometheus.jmx:jmx_prometheus_javaagent:1.0.1',
  url: 'https://repo1.maven.org/maven2/io/prometheus/jmx/jmx_prometheus_javaagent/1.0.1/jmx_prometheus_javaagent-1.0.1.jar',
  fileName: 'jmx_prometheus_javaagent-1.0.1.jar',
  sha256: '7d61f737fd661610ccc14aea79764faa1ea94a340cbc8f0029b3d2edea3d80c1',
};

/** Where the controller reads the jar: $KEELSON_JMX_EXPORTER_AGENT (the image sets it), else the user's cache. */
export function agentPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KEELSON_JMX_EXPORTER_AGENT) return env.KEELSON_JMX_EXPORTER_AGENT;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'keelson', 'jmx-exporter', agentArtifact.fileName);
}

function digest(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The jar's bytes, refused unless they are the pinned artifact. */
export async function readAgent(path = agentPath()): Promise<Buffer> {
  const bytes = await readFile(path);
  const actual = digest(bytes);
  if (actual !== agentArtifact.sha256) {
    throw new Error(`${path} is not ${agentArtifact.coordinates} (sha256 ${actual}, expected ${agentArtifact.sha256})`);
  }
  return bytes;
}

const downloads = new Map<string, Promise<string>>();

/**
 * Downloads the pinned jar to `path` unless a verified copy is already there. Callers in one process share one
 * download; other processes write their own temporary file, and the atomic rename lets the last one win.
 */
export function fetchAgent(path = agentPath()): Promise<string> {
  let download = downloads.get(path);
  if (!download) {
    download = downloadUnlessVerified(path).finally(() => downloads.delete(path));
    downloads.set(path, download);
  }
  return download;
}

async function downloadUnlessVerified(path: string): Promise<string> {
  if (await readAgent(path).then(() => true, () => false)) return path;
  const response = await fetch(agentArtifact.url);
  if (!response.ok) throw new Error(`GET ${agentArtifact.url}: HTTP ${response.status}`);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (digest(bytes) !== agentArtifact.sha256) throw new Error(`${agentArtifact.url} does not match the pinned sha256`);
  await mkdir(dirname(path), { recursive: true });
  const partial = `${path}.${process.pid}.partial`;
  await writeFile(partial, bytes);
  await rename(partial, path);
  return path;
}
