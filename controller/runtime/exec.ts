// Commands in a pod's container through pods/exec, as `kubectl exec` runs them: a WebSocket to the apiserver that
// carries stdin (closed when sent, on the v5 channel protocol), stdout, stderr and the exit status. What a container
// writes is the container's choice, not ours: output past a cap aborts the command, so that one container writing
// without end cannot run the controller, and every operator in it, out of memory.
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
  /** The command is abandoned (and the call rejects with ExecOutputExceeded) once stdout and stderr pass this. Default 1 MiB. */
  maxOutputBytes?: number;
}

/** The command wrote more than the cap: it was abandoned. */
export class ExecOutputExceeded extends Error {}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Keeps what is written while `room` allows; calls `overflow` (once) when it no longer does. */
function collector(chunks: Buffer[], room: { bytes: number }, overflow: () => void): Writable {
  return new Writable({ write(chunk: Buffer, _encoding, done) {
    room.bytes -= chunk.length;
    if (room.bytes >= 0) chunks.push(chunk);
    else overflow();
    done();
  } });
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
  const maxOutputBytes = request.maxOutputBytes ?? 1024 * 1024;
  const room = { bytes: maxOutputBytes };
  const stdin = request.stdin ? Readable.from([request.stdin]) : null;
  let socket: Awaited<ReturnType<Exec['exec']>> | undefined;
  signal?.throwIfAborted();
  let abandon = () => {};
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  try {
    return await new Promise<ExecResult>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`exec in ${request.pod}/${request.container}: no exit ` +
        `within ${timeoutMs}ms`)), timeoutMs);
      abandon = () => reject(signal!.reason);
      const overflow = () => {
        reject(new ExecOutputExceeded(`exec in ${request.pod}/${request.container}: the command wrote more than ` +
          `${maxOutputBytes} bytes; abandoned`));
        socket?.terminate();
      };
      signal?.addEventListener('abort', abandon, { once: true });
      const finish = (status: V1Status) => {
        const exitCode = exitCodeOf(status);
        if (exitCode === undefined) {
          reject(new ApiError(status.code ?? 500, status.reason ?? 'Unknown', status.message ?? 'exec failed', 'GET', path));
          return;
        }
        resolve({ exitCode, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
      };
      new Exec(config).exec(request.namespace, request.pod, request.container, request.command,
        collector(out, room, overflow), collector(err, room, overflow), stdin, false, finish).then((ws) => {
        socket = ws;
        // Abandoned (deadline, signal) while the connection was still opening: close it now that it is open.
        if (settled) ws.terminate();
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
    settled = true;
    clearTimeout(timer);
    signal?.removeEventListener('abort', abandon);
    socket?.terminate();
  }
}
