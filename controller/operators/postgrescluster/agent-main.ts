// The member agent's entry point, run by member pods from the operator's image (objects.ts says how).
import { Client } from '../../runtime/client.ts';
import { loadKubeConfig } from '../../runtime/kubeconfig.ts';
import { createLogger } from '../../runtime/log.ts';
import { RestClient } from '../../runtime/rest.ts';
import { MemberAgent } from './agent.ts';
import { serveMetrics } from './metrics.ts';
import { agentPermissions } from './permissions.ts';
import { failsafePort } from './plan.ts';

const required = (name: string) => process.env[name] || (() => { throw new Error(`${name} is not set`); })();
const log = createLogger('info');
const member = required('MEMBER');
const client = new Client(new RestClient(await loadKubeConfig(undefined), `keelson-member-agent/${member}`),
  agentPermissions, 'keelson-member-agent');
const agent = new MemberAgent({ client, namespace: required('NAMESPACE'), lease: required('LEASE'), member,
  roleFile: required('ROLE_FILE'), log });
const stop = new AbortController();
// A native sidecar is stopped after the PostgreSQL container has exited, so there is nothing left to fence.
process.once('SIGTERM', () => stop.abort());
// Other members call in failsafe at the pod's address, which the operator writes into the Lease.
const server = await agent.serve(failsafePort, '0.0.0.0');
// PostgreSQL's statistics for Prometheus; a server not up yet, or gone, says so in keelson_postgres_up. Nothing of
// it may hold up or end the agent: fencing is its job.
let lastError = '';
const metrics = serveMetrics('0.0.0.0', { socketDir: process.env.SOCKET_DIR || '/var/run/postgresql',
  port: Number(process.env.PGPORT || 5432), onError: (error, query) => {
    const said = `${query ?? ''}: ${error.message}`;
    if (said !== lastError) log.warn({ err: error, query }, 'could not read PostgreSQL\'s statistics');
    lastError = said;
  } }).catch((error: Error) => {
  log.error({ err: error }, 'could not serve metrics');
  return undefined;
});
log.info({ member, failsafePort }, 'member agent started');
await agent.run(stop.signal);
server.close();
(await metrics)?.close();
