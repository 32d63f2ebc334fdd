// A TCP link on loopback whose far side can go quiet as a network partition makes it: what the server sends is held
// back from the client, as a kernel holds what a process sent before it died, to retransmit it once the path is back.
// A client that hangs up meanwhile would get none of it: its own kernel refuses segments for a closed connection.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface HeldLink {
  port: number;
  /** Bytes the server sent that are held back from the client. */
  readonly heldBytes: number;
  /** Whether the client of a held connection hung up. */
  readonly clientHungUp: boolean;
  /** From now on, what the server sends on the connections open now is held. Connections made later pass. */
  partition(): void;
  close(): Promise<void>;
}

interface Link { client: Socket; server: Socket; held?: { chunks: Buffer[]; clientClosed: boolean } }

/** A link to 127.0.0.1:`target`, listening on a port of its own on 127.0.0.1. */
export async function heldLink(target: number): Promise<HeldLink> {
  const links = new Set<Link>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: target });
    const link: Link = { client, server: upstream };
    links.add(link);
    // Read on its own rather than piped: a pipe stops reading once the server's side is gone, and a client hanging up
    // would never be seen.
    client.on('data', (chunk: Buffer) => { if (!upstream.destroyed) upstream.write(chunk); });
    upstream.on('data', (chunk: Buffer) => (link.held ? link.held.chunks.push(chunk) : client.write(chunk)));
    upstream.on('end', () => { if (!link.held) client.end(); });
    upstream.on('error', () => { if (!link.held) client.destroy(); });
    client.on('error', () => upstream.destroy());
    client.on('close', () => {
      if (link.held) link.held.clientClosed = true;
      else upstream.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const held = () => [...links].flatMap((link) => link.held ?? []);
  return {
    port: (server.address() as { port: number }).port,
    get heldBytes() { return held().reduce((sum, h) => sum + h.chunks.reduce((n, c) => n + c.length, 0), 0); },
    get clientHungUp() { return held().some((h) => h.clientClosed); },
    partition() {
      for (const link of links) {
        if (!link.client.destroyed) link.held ??= { chunks: [], clientClosed: false };
      }
    },
    async close() {
      for (const link of links) { link.client.destroy(); link.server.destroy(); }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
