// A TCP link on loopback whose far side can go quiet as a network partition makes it: what the server sends is held,
// its close too, and delivered when the partition heals. A kernel does the same with what a process sent before it
// died: the orphaned socket retransmits it once the path is back.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface HeldLink {
  port: number;
  /** Bytes the server sent that are held back from the client. */
  readonly heldBytes: number;
  /** Whether the client of a held connection hung up. */
  readonly clientHungUp: boolean;
  /** From now on, what the server sends on the connections open now is held. Connections made later pass. */
  partition(): void;
  /** Delivers what was held, and the server's close if it came; resolves once the client took it or was gone. */
  heal(): Promise<void>;
  close(): Promise<void>;
}

interface Held { client: Socket; chunks: Buffer[]; ended: boolean; clientClosed: boolean }

/** A link to 127.0.0.1:`target`, listening on a port of its own on 127.0.0.1. */
export async function heldLink(target: number): Promise<HeldLink> {
  const open = new Set<{ client: Socket; server: Socket; held?: Held }>();
  const held: Held[] = [];
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: target });
    const link: { client: Socket; server: Socket; held?: Held } = { client, server: upstream };
    open.add(link);
    // Read on its own rather than piped: a pipe stops reading once the server's side is gone, and a client hanging up
    // would never be seen.
    client.on('data', (chunk: Buffer) => { if (!upstream.destroyed) upstream.write(chunk); });
    upstream.on('data', (chunk: Buffer) => (link.held ? link.held.chunks.push(chunk) : client.write(chunk)));
    upstream.on('end', () => (link.held ? link.held.ended = true : client.end()));
    upstream.on('error', () => { if (!link.held) client.destroy(); });
    client.on('error', () => upstream.destroy());
    client.on('end', () => { if (link.held) link.held.clientClosed = true; });
    client.on('close', () => {
      if (link.held) link.held.clientClosed = true;
      else upstream.destroy();
      open.delete(link);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    get heldBytes() { return held.reduce((sum, h) => sum + h.chunks.reduce((n, c) => n + c.length, 0), 0); },
    get clientHungUp() { return held.some((h) => h.clientClosed); },
    partition() {
      for (const link of open) {
        if (link.held) continue;
        link.held = { client: link.client, chunks: [], ended: false, clientClosed: false };
        held.push(link.held);
      }
    },
    async heal() {
      await Promise.all(held.splice(0).map((h) => new Promise<void>((resolve) => {
        if (h.clientClosed || h.client.destroyed) return resolve();
        h.client.once('error', () => resolve());
        h.client.write(Buffer.concat(h.chunks), () => (h.ended ? h.client.end(resolve) : resolve()));
      })));
    },
    async close() {
      for (const link of open) { link.client.destroy(); link.server.destroy(); }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
