// HTTP to the apiserver: JSON requests and streamed responses (watches, logs) over one keep-alive agent.
// Authentication comes from @kubernetes/client-node's KubeConfig (kubeconfig files, in-cluster, exec plugins),
// refreshed periodically so rotated tokens are picked up.
import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { signalFor } from './abort.ts';
import { execInPod, type ExecRequest, type ExecResult } from './exec.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get notFound(): boolean { return this.status === 404; }
  get conflict(): boolean { return this.status === 409; }
  get gone(): boolean { return this.status === 410; }
  get forbidden(): boolean { return this.status === 403; }
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestSpec {
  method: string;
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  /** The representation asked for; default plain JSON. */
  accept?: string;
  signal?: AbortSignal;
  /**
   * No response headers within this long of sending (a wait for one of the agent's sockets, or for the connection,
   * included; reading the credentials not), or a body that then stalls this long, abort the request. Default 30 s;
   * streams have none.
   */
  timeoutMs?: number;
  /**
   * No response headers within this long abort the request; what follows them may take as long as it does. For
   * streams: the apiserver answers a watch's headers once the watch is set up.
   */
  headersTimeoutMs?: number;
}

const defaultAuthRefreshMs = 60_000;
/** As client-go: a request the apiserver asks to be sent again later is sent at most this many times in all. */
const maxAttempts = 10;
const longestRetryAfterMs = 60_000;
/**
 * A connection that has received nothing this long is probed by TCP keepalive; Node's libuv then probes each second
 * and gives up after ten unanswered, so a watch to a peer that is gone (a partition, a host that died) fails at most
 * 25 s after it last heard anything, while a watch that is merely quiet is left open. The probes are answered by the
 * peer's kernel: a proxy in between answers for a backend that is gone, which the informer's silence limit covers.
 */
const keepAliveIdleMs = 15_000;
/** Sockets whose keepalive is set: once each, since Node's agent sets it again itself each time it frees one. */
const probed = new WeakSet<object>();

/**
 * A body cut short by its socket's failure fails with that failure (ETIMEDOUT when keepalive went unanswered), where
 * Node would say only "aborted".
 */
function failingWithItsSocket(res: IncomingMessage): IncomingMessage {
  const socket = res.socket;
  const fail = (error: Error) => res.destroy(error);
  socket.once('error', fail);
  res.once('close', () => socket.off('error', fail));
  return res;
}

/**
 * How long the apiserver asks us to wait before sending the request again, or undefined when it does not: a 429
 * (priority and fairness, or a max-in-flight limit, refused it before any work was done) or a 5xx on a read, each
 * with Retry-After in seconds, as client-go retries them.
 */
function retryAfterMs(res: IncomingMessage, method: string): number | undefined {
  const status = res.statusCode ?? 0;
  if (status !== 429 && !(status >= 500 && method === 'GET')) return undefined;
  const seconds = Number(res.headers['retry-after']);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds * 1000, longestRetryAfterMs) : undefined;
}

/** Credentials as comparable text: client-node reads cert files into new Buffers on every refresh. */
function credentialText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return value.map(credentialText).join('\n');
  return Buffer.isBuffer(value) ? value.toString('base64') : String(value);
}

function sameCredentials(a: RequestOptions, b: RequestOptions): boolean {
  return (['ca', 'cert', 'key'] as const).every((field) => credentialText(a[field]) === credentialText(b[field]));
}

function withQuery(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

async function readBody(res: IncomingMessage): Promise<string> {
  let body = '';
  res.setEncoding('utf8');
  for await (const chunk of res) body += chunk;
  return body;
}

function apiError(status: number, body: string, method: string, path: string): ApiError {
  try {
    const parsed = JSON.parse(body) as { reason?: string; message?: string };
    return new ApiError(status, parsed.reason ?? 'Unknown', parsed.message ?? body, method, path);
  } catch {
    return new ApiError(status, 'Unknown', body.slice(0, 500) || `HTTP ${status}`, method, path);
  }
}

export class RestClient {
  private options: RequestOptions = {};
  private agent: Agent | undefined;
  private refreshedAt = 0;
  readonly server: URL;

  /** `authRefreshMs`: how often credentials are read again (tokens and certificates rotate). */
  constructor(private readonly config: KubeConfig, readonly userAgent = 'keelson',
    private readonly authRefreshMs = defaultAuthRefreshMs) {
    const cluster = config.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    // Its requests would go straight to the server, past the proxy: refused rather than done behind the user's back.
    if (cluster.proxyUrl) {
      throw new Error(`the kubeconfig's cluster ${cluster.name} sets proxy-url, which Keelson does not support`);
    }
    this.server = new URL(cluster.server);
  }

  private async connection(): Promise<RequestOptions> {
    if (this.agent && Date.now() - this.refreshedAt < this.authRefreshMs) return this.options;
    const options: RequestOptions = {};
    await this.config.applyToHTTPSOptions(options);
    const { ca, cert, key, rejectUnauthorized } = options;
    // A new agent drops every open connection, watches included: only when the TLS credentials really changed.
    if (!this.agent || !sameCredentials(options, this.options)) {
      this.agent?.destroy();
      this.agent = new Agent({ keepAlive: true, keepAliveMsecs: keepAliveIdleMs, maxSockets: 64, ca, cert, key,
        ...(rejectUnauthorized === undefined ? {} : { rejectUnauthorized }) });
    }
    this.options = options;
    this.refreshedAt = Date.now();
    return options;
  }

  /**
   * Sends the request and resolves with the response once its headers arrive; non-2xx becomes an ApiError. A 429 or
   * a failed read with Retry-After is sent again after the wait it asks for.
   */
  async open(spec: RequestSpec): Promise<IncomingMessage> {
    const signal = signalFor(spec.signal);
    for (let attempt = 1; ; attempt++) {
      const res = await this.send(spec, signal);
      if (res.statusCode! >= 200 && res.statusCode! < 300) return failingWithItsSocket(res);
      const waitMs = attempt < maxAttempts ? retryAfterMs(res, spec.method) : undefined;
      if (waitMs === undefined) throw apiError(res.statusCode!, await readBody(res), spec.method, spec.path);
      res.resume();
      await sleep(waitMs, undefined, { signal });
    }
  }

  private async send(spec: RequestSpec, signal: AbortSignal | undefined): Promise<IncomingMessage> {
    const auth = await this.connection();
    const path = withQuery(spec.path, spec.query);
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const headers: Record<string, string> = {
      ...(auth.headers as Record<string, string> | undefined),
      Accept: spec.accept ?? 'application/json',
      'User-Agent': this.userAgent,
    };
    if (body !== undefined) {
      headers['Content-Type'] = spec.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    signal?.throwIfAborted();
    return new Promise<IncomingMessage>((resolve, reject) => {
      const timers: NodeJS.Timeout[] = [];
      const onAbort = () => fail(signal!.reason as Error);
      const settle = () => {
        timers.forEach(clearTimeout);
        signal?.removeEventListener('abort', onAbort);
      };
      const req = request({
        protocol: this.server.protocol, hostname: this.server.hostname, port: this.server.port,
        path: `${this.server.pathname.replace(/\/$/, '')}${path}`, method: spec.method, headers, agent: this.agent,
        ...(auth.auth ? { auth: auth.auth } : {}), signal,
      }, (res) => {
        settle();
        resolve(res);
      });
      // Rejected at once: a request still waiting for one of the agent's sockets, or for its connection, reports its
      // error only once it has one, and Node's own timeout counts only from then.
      const fail = (error: Error) => {
        settle();
        req.destroy(error);
        reject(error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.once('close', settle);
      const timedOut = (what: string, ms: number) => new Error(`${spec.method} ${path}: ${what} in ${ms}ms`);
      const giveUpAfter = (ms: number, what: string) => timers.push(setTimeout(() => fail(timedOut(what, ms)), ms));
      if (spec.headersTimeoutMs) giveUpAfter(spec.headersTimeoutMs, 'no response headers');
      if (spec.timeoutMs) {
        giveUpAfter(spec.timeoutMs, 'no answer');
        // Once answered, a body that stalls this long is given up too.
        req.setTimeout(spec.timeoutMs, () => req.destroy(timedOut('no answer', spec.timeoutMs!)));
      }
      req.on('socket', (socket) => {
        if (probed.has(socket)) return;
        probed.add(socket);
        socket.setKeepAlive(true, keepAliveIdleMs);
      });
      req.on('error', (error) => {
        settle();
        reject(error);
      });
      req.end(body);
    });
  }

  async json<T>(spec: RequestSpec): Promise<T> {
    const res = await this.open({ timeoutMs: 30_000, ...spec });
    const text = await readBody(res);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  async text(spec: RequestSpec): Promise<string> {
    return readBody(await this.open({ timeoutMs: 30_000, ...spec }));
  }

  /** Runs a command in a container (pods/exec), with the same credentials, abandoned with the work it is done for. */
  exec(request: ExecRequest): Promise<ExecResult> {
    return execInPod(this.config, request, signalFor());
  }

  close(): void {
    this.agent?.destroy();
  }
}
