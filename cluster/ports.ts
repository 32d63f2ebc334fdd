import { createServer } from 'node:net';

// Below the kernel's ephemeral range (32768-60999 by default) and the NodePort range (30000-32767): a port handed out
// for port 0 can be taken meanwhile by any outgoing connection (the apiserver's to etcd, the kubelet's to the
// apiserver) before the component it was chosen for binds it; one chosen here only by another listener choosing it.
const lowest = 20_000;
const span = 10_000;

const bindable = (port: number) => new Promise<boolean>((resolve) => {
  const server = createServer();
  server.once('error', () => resolve(false));
  server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
});

/** A loopback port that was free a moment ago, outside the range outgoing connections take theirs from. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = lowest + Math.floor(Math.random() * span);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free loopback port in ${lowest}-${lowest + span - 1}`);
}
