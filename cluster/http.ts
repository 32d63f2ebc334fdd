import { request } from 'node:https';
import { request as plainRequest } from 'node:http';
import { readFileSync } from 'node:fs';

export interface ClientTls {
  ca: string;
  cert: string;
  key: string;
}

/**
 * GET for readiness probes. With `tls`, the server is verified against its CA and we present a client
 * certificate; components that serve a self-signed certificate are probed without `tls` and not verified.
 */
export function probe(url: string, tls?: ClientTls, timeoutMs = 2_000): Promise<{ status: number; body: string }> {
  const options = tls
    ? { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) }
    : { rejectUnauthorized: false };
  const send = url.startsWith('https:') ? request : plainRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { ...options, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in ${timeoutMs}ms`)));
    req.on('error', reject);
    req.end();
  });
}
