// A loopback TCP proxy a test can cut: it drops every open connection (a watch cut mid-stream) and, while
// partitioned, resets new ones; or it freezes, holding connections open with nothing flowing. TLS passes through.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class CuttableProxy {
  private readonly pairs = new Set<[Socket, Socket]>();
  private paused = false;
  private frozen = false;
  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(target: { host: string; port: number }): Promise<CuttableProxy> {
    let proxy: CuttableProxy | undefined;
    const server = createServer((client) => {
      if (!proxy || proxy.paused) {
        client.resetAndDestroy();
        return;
      }
      const upstream = connect(target.port, target.host);
      const pair: [Socket, Socket] = [client, upstream];
      proxy.pairs.add(pair);
      const close = () => {
        proxy!.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close).pipe(upstream);
      upstream.on('error', close).on('close', close).pipe(client);
      // After the pipes, which set their sources flowing.
      if (proxy.frozen) pair.forEach((s) => s.pause());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new CuttableProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** Drops every open connection and refuses new ones until `resume`. */
  partition(): void {
    this.paused = true;
    for (const [client, upstream] of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  resume(): void {
    this.paused = false;
  }

  /** Keeps every connection open but lets nothing through, as a dead peer behind a silent network would. */
  freeze(): void {
    this.frozen = true;
    for (const pair of this.pairs) pair.forEach((s) => s.pause());
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of this.pairs) pair.forEach((s) => s.resume());
  }

  async close(): Promise<void> {
    this.partition();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
