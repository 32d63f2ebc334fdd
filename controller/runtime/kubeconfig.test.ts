import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'https://127.0.0.1:6443' } }]
users: [{ name: u, user: { token: secret-token } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

// In a process of its own, so no module this test runner already loaded hides what loading a KubeConfig loads.
const probe = `
import { registerHooks } from 'node:module';
const resolved = [];
registerHooks({ resolve(specifier, context, next) { const result = next(specifier, context); resolved.push(result.url); return result; } });
const { loadKubeConfig } = await import(process.argv[1]);
const config = await loadKubeConfig(process.argv[2]);
const options = {};
await config.applyToHTTPSOptions(options);
console.log(JSON.stringify({ server: config.getCurrentCluster()?.server, authorization: options.headers?.Authorization,
  generated: resolved.filter((url) => url.includes('/client-node/dist/gen/')) }));
`;

describe('loadKubeConfig', () => {
  it('loads a kubeconfig file without the generated API clients', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keelson-kubeconfig-'));
    try {
      await writeFile(join(dir, 'config'), kubeconfig);
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', probe,
        new URL('./kubeconfig.js', import.meta.url).href, join(dir, 'config')]);
      const loaded = JSON.parse(stdout) as { server: string; authorization: string; generated: string[] };
      assert.equal(loaded.server, 'https://127.0.0.1:6443');
      assert.equal(loaded.authorization, 'Bearer secret-token');
      assert.ok(loaded.generated.length > 0, 'the probe saw no generated module at all, so it proves nothing');
      assert.deepEqual(loaded.generated.filter((url) => /\/gen\/(index|apis\/|models\/all|types\/)/.test(url)), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
