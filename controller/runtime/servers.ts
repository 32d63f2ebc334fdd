// /metrics, and /healthz and /readyz, each on the address its flag gives ("0" turns a server off). /metrics may be
// served over HTTPS to authenticated, authorized scrapers only (see metrics-auth.ts); probes stay plain HTTP.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** ":8080" listens on every interface, "127.0.0.1:0" on a free loopback port. */
export function parseBindAddress(address: string): { host: string | undefined; port: number } | undefined {
  if (address === '0' || address === '') return undefined;
  const colon = address.lastIndexOf(':');
  if (colon < 0) throw new Error(`bind address "${address}" is not host:port`);
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bind address "${address}" has no valid port`);
  return { host: host || undefined, port };
}

type Handler = (req: IncomingMessage) => Promise<{ status: number; type: string; body: string }>;

/** TLS and a gate for every request: how secure metrics are served. */
export interface SecureServing {
  cert: string;
  key: string;
  /** 200 to serve, or the status and reason to answer with instead. */
  authorize(authorization: string | undefined): Promise<{ status: number; reason?: string }>;
}

async function serve(address: string, routes: Record<string, Handler>, secure?: SecureServing): Promise<Server | undefined> {
  const bind = parseBindAddress(address);
  if (!bind) return undefined;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const route = routes[(req.url ?? '/').split('?')[0]!];
    if (!route || req.method !== 'GET') {
      res.writeHead(404).end('not found\n');
      return;
    }
    const verdict: Promise<{ status: number; reason?: string }> = secure ? secure.authorize(req.headers.authorization)
      : Promise.resolve({ status: 200 });
    verdict.then((gate) => gate.status === 200 ? route(req)
      : { status: gate.status, type: 'text/plain', body: `${gate.reason ?? 'refused'}\n` })
      .then(({ status, type, body }) => res.writeHead(status, { 'Content-Type': type,
        ...(status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {}) }).end(body),
        (error: Error) => res.writeHead(500).end(`${error.message}\n`));
  };
  const server = secure ? createTlsServer({ cert: secure.cert, key: secure.key, minVersion: 'TLSv1.2' }, handle)
    : createServer(handle);
  await new Promise<void>((resolve, reject) => server.listen(bind.port, bind.host, resolve).once('error', reject));
  return server;
}

export function boundPort(server: Server | undefined): number | undefined {
  return (server?.address() as AddressInfo | null)?.port;
}

export function serveMetrics(address: string, registry: Registry, secure?: SecureServing): Promise<Server | undefined> {
  return serve(address, {
    '/metrics': async () => ({ status: 200, type: registry.contentType, body: await registry.metrics() }),
  }, secure);
}

/** Health checks: each returns undefined when fine, or why not. */
export function serveHealth(address: string, checks: { healthz: () => string | undefined; readyz: () => string | undefined }):
Promise<Server | undefined> {
  const answer = (check: () => string | undefined): Handler => async () => {
    const problem = check();
    return problem === undefined
      ? { status: 200, type: 'text/plain', body: 'ok\n' }
      : { status: 503, type: 'text/plain', body: `${problem}\n` };
  };
  return serve(address, { '/healthz': answer(checks.healthz), '/readyz': answer(checks.readyz) });
}
