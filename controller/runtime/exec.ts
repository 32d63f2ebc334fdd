// Commands in a pod's container through pods/exec, as `kubectl exec` runs them: a WebSocket to the apiserver that
// carries stdin (closed when sent, on the v5 channel protocol), stdout, stderr and the exit status.
import { Readable, Writable } from 'node:stream';
import type { KubeConfig, V1Status } from '@kubernetes/client-node';
import { Exec } from '@kubernetes/client-node/dist/exec.js';
import { ApiError } from './rest.ts';

export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  stdin?: Buffer;
  /** The command is abandoned (and the call rejects) after this long. Default 60 s. */
  timeoutMs?: number;
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

function collector(chunks: Buffer[]): Writable {
  return new Writable({ write(chunk: Buffer, _encoding, done) { chunks.push(chunk); done(); } });
}

/** The exit code a finished command's status reports, or undefined when the status is not an exit at all. */
export function exitCodeOf(status: V1Status): number | undefined {
  if (status.status === 'Success') return 0;
  if (status.reason !== 'NonZeroExitCode') return undefined;
  const code = Number(status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message);
  return Number.isInteger(code) ? code : undefined;
}

export async function execInPod(config: KubeConfig, request: ExecRequest, signal?: AbortSignal): Promise<ExecResult> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const path = `/api/v1/namespaces/${request.namespace}/pods/${request.pod}/exec`;
  const timeoutMs = request.timeoutMs ?? 60_000;
  const stdin = request.stdin ? Readable.from([request.stdin]) : null;
  let socket: Awaited<ReturnType<Exec['exec']>> | undefined;
  signal?.throwIfAborted();
  let abandon = () => {};
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<ExecResult>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`exec in ${request.pod}/${request.container}: no exit ` +
        `within ${timeoutMs}ms`)), timeoutMs);
      abandon = () => reject(signal!.reason);
      signal?.addEventListener('abort', abandon, { once: true });
      const finish = (status: V1Status) => {
        const exitCode = exitCodeOf(status);
        if (exitCode === undefined) {
          reject(new ApiError(status.code ?? 500, status.reason ?? 'Unknown', status.message ?? 'exec failed', 'GET', path));
          return;
        }
        resolve({ exitCode, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
      };
      new Exec(config).exec(request.namespace, request.pod, request.container, request.command, collector(out),
        collector(err), stdin, false, finish).then((ws) => {
        socket = ws;
        ws.on('close', () => {
          reject(new Error(`exec in ${request.pod}/${request.container}: the stream closed without an exit status`));
        });
      }, (error: { message?: string }) => {
        const status = /Unexpected server response: (\d+)/.exec(error.message ?? '')?.[1];
        reject(status ? new ApiError(Number(status), 'Upgrade', `exec refused: HTTP ${status}`, 'GET', path)
          : new Error(`exec in ${request.pod}/${request.container}: ${error.message ?? String(error)}`));
      });
    });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', abandon);
    socket?.terminate();
  }
}
