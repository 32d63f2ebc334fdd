import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { freePort } from './ports.ts';

it('chooses ports no outgoing connection can take before the component binds them', async () => {
  const [low, high] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/).map(Number);
  const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
  for (const port of ports) assert.ok(port < low! || port > high!, `${port} is in the ephemeral range ${low}-${high}`);
  for (const port of ports) assert.ok(port < 30_000 || port > 32_767, `${port} is in the NodePort range`);
});
