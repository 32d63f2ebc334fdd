// The cuttable proxy the watch tests stand on: frozen, it must hold what a connection opened before or during the
// freeze sends, and deliver it when thawed; a test of a silent watch is only as good as this.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../../cluster/wait.ts';
import { CuttableProxy } from './proxy.ts';

it('holds what connections opened before and during a freeze send, and delivers it on thaw', async () => {
  const echo = createServer((socket) => socket.pipe(socket));
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  const proxy = await CuttableProxy.start({ host: '127.0.0.1', port: (echo.address() as { port: number }).port });
  const heard = new Map<Socket, string>();
  const open = async () => {
    const socket = connect(proxy.port, '127.0.0.1');
    await once(socket, 'connect');
    heard.set(socket, '');
    socket.on('data', (chunk) => heard.set(socket, (heard.get(socket) ?? '') + chunk));
    return socket;
  };
  try {
    const before = await open();
    before.write('warm');
    await waitFor('the echo through the proxy', () => heard.get(before) === 'warm', { timeoutMs: 5_000 });
    proxy.freeze();
    before.write('+before');
    const during = await open();
    during.write('during');
    // Nothing may come back while frozen; a window, since absence has no event to wait for.
    await sleep(1_000);
    assert.deepEqual([heard.get(before), heard.get(during)], ['warm', '']);
    proxy.thaw();
    await waitFor('both echoes after the thaw',
      () => heard.get(before) === 'warm+before' && heard.get(during) === 'during', { timeoutMs: 5_000 });
  } finally {
    for (const socket of heard.keys()) socket.destroy();
    await proxy.close();
    echo.close();
  }
});
