import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentIdentity, bytesOf, configurationMap, disruptionBudgets, memberPod, memberPodMonitor, repositoryHost, walRetention }
  from './objects.ts';
import { memberHostOptions } from './repository-host.ts';

const cluster = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster',
  metadata: { name: 'db', namespace: 'shop', uid: 'u-1' }, spec: {} } as any;
const spec = { size: 3, version: '17.2', paused: false, antiAffinity: true, nodeSelector: { disk: 'ssd' },
  storage: { size: '1Gi', keepOnScaleDown: true } } as any;

describe('a cluster backing up into its volume', () => {
  const volume = { ...spec, backup: { schedule: '@daily', retain: 3 } };
  const pod = (s: object, options: object = {}, of = cluster) => memberPod(of, s as any, 'db-0000',
    { role: 'primary', agentImage: 'k:1', replicationSslMode: 'verify-full', ...options }) as any;
  const env = (p: any) => Object.fromEntries(p.spec.containers[0].env.map((e: any) => [e.name, e.value ?? e.valueFrom]));

  it('archives from every member to the repository host over TLS, with the peer certificate and no other key', () => {
    const member = pod(volume);
    const settings = env(member);
    assert.equal(settings.PGBACKREST_STANZA, 'db');
    assert.equal(settings.PGBACKREST_REPO1_HOST, 'db-repo.db-members.shop.svc');
    assert.equal(settings.PGBACKREST_REPO1_HOST_TYPE, 'tls');
    assert.equal(settings.PGBACKREST_REPO1_HOST_CERT_FILE, '/keelson-backup-peer/tls.crt');
    assert.equal(settings.PGBACKREST_REPO1_TYPE, undefined, 'the repository host\'s own: a directory on its volume');
    assert.ok(member.spec.containers[0].volumeMounts.some((m: any) => m.name === 'backup-peer' && m.readOnly));
    assert.ok(member.spec.initContainers.some((c: any) => c.name === 'backup-server'), 'the repository host reaches it');
    assert.match(member.metadata.annotations['keelson.dev/member-revision'], /^[0-9a-f]{16}$/);
  });

  it('runs the repository host as a hardened pod of its own on the volume, at a member address, with no token', () => {
    const host = repositoryHost(cluster, volume, 'postgres:17.2') as any;
    assert.equal(host.metadata.name, 'db-repo');
    assert.equal(`${host.spec.hostname}.${host.spec.subdomain}`, 'db-repo.db-members', 'a name the peer certificate has');
    assert.equal(host.metadata.labels['keelson.dev/member'], undefined, 'no member');
    assert.equal(host.metadata.ownerReferences[0].uid, 'u-1');
    assert.equal(host.spec.automountServiceAccountToken, false);
    assert.equal(host.spec.securityContext.runAsNonRoot, true);
    const [server] = host.spec.containers;
    assert.deepEqual(server.securityContext.capabilities, { drop: ['ALL'] });
    assert.equal(server.securityContext.readOnlyRootFilesystem, true);
    const settings = Object.fromEntries(server.env.map((e: any) => [e.name, e.value]));
    assert.equal(settings.PGBACKREST_TLS_SERVER_AUTH, 'keelson-backup=db');
    assert.equal(settings.PGBACKREST_REPO1_PATH, '/backups/pgbackrest');
    assert.deepEqual(host.spec.volumes.find((v: any) => v.name === 'backups').persistentVolumeClaim, { claimName: 'db-backups' });
    assert.deepEqual(host.spec.nodeSelector, { disk: 'ssd' });
    assert.equal(host.spec.containers[0].image, 'postgres:17.2', 'the primary\'s: pgBackRest speaks to its own version only');
    // Made again when anything it is made from changes: its image, say.
    const again = repositoryHost(cluster, volume, 'postgres:17.3') as any;
    assert.notEqual(again.metadata.annotations['keelson.dev/repository-revision'],
      host.metadata.annotations['keelson.dev/repository-revision']);
  });

  it('reaches the primary, and a standby to copy from, as pgBackRest\'s pg1 and pg2 from the repository host', () => {
    const layout = { pgdata: '/data', socketDir: '/run', port: 5432 };
    assert.match(memberHostOptions(cluster, { primary: 'db-0001' }, layout), /^--pg1-host=db-0001\.db-members\.shop\.svc /);
    const both = memberHostOptions(cluster, { primary: 'db-0001', standby: 'db-0002' }, layout);
    assert.match(both, / --pg2-host=db-0002\.db-members\.shop\.svc .* --backup-standby$/);
    assert.match(both, / --pg2-host-cert-file=\/keelson-backup-peer\/tls\.crt /);
  });

  it('recovers a lost cluster from its own archive through the repository host, and a new one from another\'s volume', () => {
    const lost = pod(volume, { restoreFrom: { cluster: 'db' } }, { ...cluster, status: { bootstrapped: true } });
    assert.equal(env(lost).RECOVER_STANZA, 'db');
    assert.equal(env(lost).RECOVER_PATH, '/backups/pgbackrest');
    assert.equal(env(lost).RECOVER_FROM_VOLUME, undefined);
    assert.ok(!lost.spec.volumes.some((v: any) => v.name === 'backups'));
    const made = pod(volume, { restoreFrom: { cluster: 'old', backup: '20261127-030000F' } });
    assert.equal(env(made).RECOVER_STANZA, 'old');
    assert.equal(env(made).RECOVER_FROM_VOLUME, 'true');
    assert.equal(env(made).RECOVER_SET, '20261127-030000F');
    assert.deepEqual(made.spec.volumes.find((v: any) => v.name === 'backups').persistentVolumeClaim,
      { claimName: 'old-backups', readOnly: true });
    assert.ok(made.spec.containers[0].volumeMounts.some((m: any) => m.name === 'backups' && m.readOnly &&
      `${m.mountPath}/pgbackrest` === env(made).RECOVER_PATH));
    // Beside that cluster's repository host, where the volume is attached, when the scheduler can.
    assert.deepEqual(made.spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm,
      { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { 'keelson.dev/postgrescluster': 'old',
        'app.kubernetes.io/component': 'repository-host' } } });
  });
});

describe('member pods of a cluster archiving into an object store', () => {
  const objectStore = { endpoint: 'https://s3.example', bucket: 'pg', region: 'us-east-1', credentials: { name: 'keys' },
    ca: { name: 'store-ca', key: 'ca.pem' } };
  const archiving = { ...spec, backup: { schedule: '@daily', retain: 3, objectStore } };
  const pod = (s: object) => memberPod(cluster, s as any, 'db-0000', { role: 'primary', agentImage: 'k:1', replicationSslMode: 'verify-full' }) as any;
  const env = (p: any) => Object.fromEntries(p.spec.containers[0].env.map((e: any) => [e.name, e.value ?? e.valueFrom]));

  it('carry pgBackRest\'s settings, the store\'s CA mounted, and the revision they were made from', () => {
    const archived = pod(archiving);
    assert.equal(env(archived).PGBACKREST_REPO1_PATH, '/shop/db');
    assert.deepEqual(env(archived).PGBACKREST_REPO1_S3_KEY_SECRET, { secretKeyRef: { name: 'keys', key: 'AWS_SECRET_ACCESS_KEY' } });
    assert.ok(archived.spec.volumes.some((v: any) => v.configMap?.name === 'store-ca'));
    assert.match(archived.metadata.annotations['keelson.dev/member-revision'], /^[0-9a-f]{16}$/);
    assert.equal(env(archived).RECOVER_STANZA, undefined);
    const plain = pod(spec);
    assert.equal(env(plain).PGBACKREST_STANZA, undefined);
    assert.equal(plain.metadata.annotations['keelson.dev/member-revision'], undefined);
  });

  it('run pgBackRest\'s TLS server beside PostgreSQL, with the peer certificate and no key of the store', () => {
    const archived = pod(archiving);
    const server = archived.spec.initContainers.find((c: any) => c.name === 'backup-server');
    assert.equal(server.restartPolicy, 'Always');
    assert.equal(server.image, archived.spec.containers[0].image);
    const serverEnv = Object.fromEntries(server.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
    assert.equal(serverEnv.PGBACKREST_TLS_SERVER_AUTH, 'keelson-backup=db');
    assert.deepEqual(Object.keys(serverEnv).filter((k) => /REPO|S3|KEY_SECRET/.test(k) || typeof serverEnv[k] !== 'string'), []);
    const mounts = Object.fromEntries(server.volumeMounts.map((m: any) => [m.name, m]));
    assert.equal(mounts.data.readOnly, true);
    assert.equal(mounts['backup-peer'].readOnly, true);
    assert.equal(server.securityContext.readOnlyRootFilesystem, true);
    assert.deepEqual(archived.spec.volumes.find((v: any) => v.name === 'backup-peer').secret,
      { secretName: 'db-backup-peer', defaultMode: 0o440, optional: true });
    assert.ok(archived.spec.containers[0].volumeMounts.some((m: any) => m.name === 'backup-peer'), 'PostgreSQL\'s, to back up from a standby');
    assert.deepEqual(pod(spec).spec.initContainers.map((c: any) => c.name), ['agent']);
  });

  it('recover another cluster\'s archive to the target when made by point-in-time recovery', () => {
    const recovered = env(pod({ ...archiving, bootstrap: { recovery: { source: 'old', targetTime: '2026-11-26T02:00:00Z' } } }));
    assert.equal(recovered.RECOVER_STANZA, 'old');
    assert.equal(recovered.RECOVER_PATH, '/shop/old');
    assert.equal(recovered.RECOVER_TARGET_TYPE, 'time');
    assert.equal(recovered.RECOVER_TARGET, '2026-11-26 02:00:00+00');
    assert.equal(env(pod({ ...archiving, bootstrap: { recovery: { source: 'old' } } })).RECOVER_TARGET, undefined);
  });

  it('recover the cluster\'s own archive, all of it, once its data exists, whatever bootstrap said', () => {
    const made = { ...cluster, status: { bootstrapped: true } };
    const lost = memberPod(made, { ...archiving, bootstrap: { recovery: { source: 'old', targetLSN: '0/3000000' } } },
      'db-0003', { role: 'primary', agentImage: 'k:1', restoreFrom: { cluster: 'db' }, replicationSslMode: 'verify-full' }) as any;
    assert.equal(env(lost).RECOVER_STANZA, 'db');
    assert.equal(env(lost).RECOVER_PATH, '/shop/db');
    assert.equal(env(lost).RECOVER_TARGET, undefined);
    assert.equal(env(lost).RESTORE, undefined);
    assert.equal(env(lost).BOOTSTRAPPED, undefined);
    assert.ok(!lost.spec.volumes.some((v: any) => v.name === 'backups'));
  });

  it('never recover into a member made while the cluster has others, which stops rather than initialise', () => {
    const made = { ...cluster, status: { bootstrapped: true } };
    for (const role of ['primary', 'replica'] as const) {
      const member = env(memberPod(made, archiving, 'db-0001', { role, agentImage: 'k:1', replicationSslMode: 'verify-full' }));
      assert.equal(member.RECOVER_STANZA, undefined);
      assert.equal(member.BOOTSTRAPPED, 'true');
    }
    assert.equal(env(memberPod(made, spec, 'db-0001', { role: 'primary', agentImage: 'k:1', replicationSslMode: 'verify-full' })).BOOTSTRAPPED, 'true');
    assert.equal(env(pod(archiving)).BOOTSTRAPPED, undefined);
  });
});

describe('member pods', () => {
  const pod = memberPod(cluster, spec, 'db-0001', { role: 'replica', agentImage: 'keelson/controller:1.2.3', replicationSslMode: 'verify-full' }) as any;
  const container = pod.spec.containers[0];

  it('run postgres:<version> hardened, as the postgres user, spread across nodes where asked', () => {
    assert.equal(container.image, 'postgres:17.2');
    assert.deepEqual(container.securityContext.capabilities, { drop: ['ALL'] });
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.equal(pod.spec.securityContext.runAsUser, 999);
    assert.deepEqual(pod.spec.nodeSelector, { disk: 'ssd' });
    assert.equal(pod.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey,
      'kubernetes.io/hostname');
    assert.equal(pod.metadata.ownerReferences[0].uid, 'u-1');
  });

  it('start with the configuration last accepted, from a ConfigMap that need not exist yet', () => {
    const volume = pod.spec.volumes.find((v: any) => v.configMap?.name === 'db-configuration');
    assert.deepEqual(volume.configMap, { name: 'db-configuration', optional: true });
    const mount = container.volumeMounts.find((m: any) => m.name === volume.name);
    assert.equal(container.env.find((e: any) => e.name === 'CONFIG_DIR').value, mount.mountPath);
    const map = configurationMap(cluster, { parameters: { work_mem: '16MB' } }) as any;
    assert.match(map.data['keelson.conf'], /^work_mem = '16MB'$/m);
    assert.equal(map.metadata.ownerReferences[0].uid, 'u-1');
  });

  it('serve the certificate of <name>-tls from a copy in memory no other container sees, and stream over verify-full', () => {
    const env = (name: string) => container.env.find((e: any) => e.name === name)?.value;
    const source = pod.spec.volumes.find((v: any) => v.secret?.secretName === 'db-tls');
    assert.equal(container.volumeMounts.find((m: any) => m.name === source.name).mountPath, env('TLS_SOURCE'));
    const copy = container.volumeMounts.find((m: any) => m.mountPath === env('TLS_DIR'));
    assert.deepEqual(pod.spec.volumes.find((v: any) => v.name === copy.name).emptyDir.medium, 'Memory');
    assert.ok(!pod.spec.initContainers[0].volumeMounts.some((m: any) => [source.name, copy.name].includes(m.name)));
    assert.equal(env('PRIMARY_SSLMODE'), 'verify-full');
    assert.equal(env('PRIMARY_HOST'), 'db.shop.svc');
    assert.equal(pod.metadata.annotations['keelson.dev/tls'], 'verify-full');
  });

  it('get passwords only by reference to the cluster\'s Secret, and their role from the agent', () => {
    const passwords = container.env.filter((e: any) => /PASSWORD/.test(e.name));
    assert.equal(passwords.length, 2);
    for (const e of passwords) {
      assert.equal(e.value, undefined);
      assert.equal(e.valueFrom.secretKeyRef.name, 'db-credentials');
    }
    assert.equal(pod.metadata.labels['keelson.dev/role'], 'replica');
    const roleFile = (c: any) => c.env.find((e: any) => e.name === 'ROLE_FILE').value;
    assert.equal(roleFile(container), roleFile(pod.spec.initContainers[0]));
  });

  it('run the member agent as a native sidecar from the operator\'s image, the only container with a token', () => {
    const [agent] = pod.spec.initContainers;
    assert.equal(agent.image, 'keelson/controller:1.2.3');
    assert.equal(agent.restartPolicy, 'Always');
    // Nothing in the user's image can reach into the agent's processes, its token among what they hold.
    assert.equal(pod.spec.shareProcessNamespace, undefined);
    assert.equal(pod.spec.automountServiceAccountToken, false);
    assert.equal(pod.spec.serviceAccountName, 'db-member');
    const tokenMounts = (c: any) => c.volumeMounts.filter((m: any) => m.name === 'agent-token');
    assert.equal(tokenMounts(agent).length, 1);
    assert.equal(tokenMounts(container).length, 0);
    assert.deepEqual(agent.volumeMounts.map((m: any) => m.name).sort(), ['agent-token', 'run']);
  });

  it('give a busy primary time to answer its readiness probe, and its PID 1 the fence bound', () => {
    assert.deepEqual([container.readinessProbe.timeoutSeconds, container.readinessProbe.failureThreshold], [5, 3]);
    assert.deepEqual(container.readinessProbe.exec.command, ['sh', '/keelson/ready.sh']);
    assert.equal(container.env.find((e: any) => e.name === 'FENCE_AFTER').value, '8');
  });

  it('stream through a slot of their own, keeping WAL for others in shares of their volume', () => {
    const env = (name: string) => container.env.find((e: any) => e.name === name).value;
    assert.deepEqual([env('REPLICATION_SLOT'), env('WAL_KEEP_SIZE'), env('MAX_SLOT_WAL_KEEP_SIZE')], ['db_0001', '128MB', '256MB']);
    assert.deepEqual(walRetention('256Mi'), { walKeepSize: '32MB', maxSlotWalKeepSize: '64MB' });
    assert.deepEqual(walRetention('100Mi'), { walKeepSize: '32MB', maxSlotWalKeepSize: '32MB' });
    assert.equal(bytesOf('10G'), 10e9);
    assert.equal(bytesOf(1048576), 2 ** 20);
    assert.equal(bytesOf('1.5Gi'), 1.5 * 2 ** 30);
    assert.throws(() => bytesOf('500m'), /not a storage quantity/);
  });

  it('give the agents a Role on their cluster\'s Lease alone', () => {
    const { role, roleBinding } = agentIdentity(cluster) as any;
    assert.deepEqual(role.rules, [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'],
      resourceNames: ['db-primary'] }]);
    assert.deepEqual(roleBinding.subjects, [{ kind: 'ServiceAccount', name: 'db-member', namespace: 'shop' }]);
  });
});

describe('the PodMonitor spec.podMonitor asks for', () => {
  it('scrapes every member\'s agent on its metrics port, the series labelled with the cluster', () => {
    assert.equal(memberPodMonitor(cluster, spec), undefined);
    const monitor = memberPodMonitor(cluster, { ...spec, podMonitor: { labels: { release: 'prom' }, interval: '15s' } }) as any;
    assert.deepEqual(monitor.spec.selector, { matchLabels: { 'keelson.dev/postgrescluster': 'db' } });
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    const pod = memberPod(cluster, spec, 'db-0000', { role: 'primary', agentImage: 'k:1', replicationSslMode: 'verify-full' }) as any;
    const ports = pod.spec.initContainers.flatMap((c: any) => c.ports ?? []);
    assert.deepEqual(ports.find((p: any) => p.name === endpoint.port), { name: 'metrics', containerPort: 9187 });
    assert.equal(pod.metadata.labels['keelson.dev/postgrescluster'], 'db');
    assert.deepEqual(endpoint.relabelings, [{ action: 'replace', targetLabel: 'postgrescluster',
      sourceLabels: ['__meta_kubernetes_pod_label_keelson_dev_postgrescluster'] }]);
    assert.equal(endpoint.interval, '15s');
    assert.equal(monitor.metadata.labels.release, 'prom');
    assert.equal(monitor.metadata.ownerReferences[0].kind, 'PostgresCluster');
  });
});

describe('the members\' PodDisruptionBudgets', () => {
  it('select replicas and the primary apart, keep all replicas but one (all while the primary is not ready), and the primary of two members or more', () => {
    const steady = { primaryReady: true, switchoverOnDrain: true };
    const [replicas, primary] = disruptionBudgets(cluster, spec, steady) as any[];
    const selector = (role: string) => ({ matchLabels: { 'keelson.dev/postgrescluster': 'db', 'keelson.dev/role': role },
      matchExpressions: [{ key: 'keelson.dev/member', operator: 'Exists' }] });
    assert.deepEqual([replicas.metadata.name, replicas.spec], ['db', { minAvailable: 1,
      unhealthyPodEvictionPolicy: 'IfHealthyBudget', selector: selector('replica') }]);
    assert.deepEqual([primary.metadata.name, primary.spec], ['db-primary', { minAvailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow', selector: selector('primary') }]);
    const minAvailable = (size: number, state = steady) => disruptionBudgets(cluster, { ...spec, size }, state)
      .map((b: any) => b.spec.minAvailable);
    assert.deepEqual(minAvailable(1), [0, 0]);
    assert.deepEqual(minAvailable(2), [0, 1]);
    // The primary not ready: every replica is kept, for a failover to promote.
    assert.deepEqual(minAvailable(2, { ...steady, primaryReady: false }), [1, 1]);
    assert.deepEqual(minAvailable(3, { ...steady, primaryReady: false }), [2, 1]);
    // Not watching for drains, the operator cannot switch over before one: the primary is evicted as any member.
    assert.deepEqual(minAvailable(3, { ...steady, switchoverOnDrain: false }), [1, 0]);
    const pod = memberPod(cluster, spec, 'db-0000', { role: 'primary', agentImage: 'k:1', replicationSslMode: 'verify-full' }) as any;
    assert.deepEqual([pod.metadata.labels['keelson.dev/member'], pod.metadata.labels['keelson.dev/role']], ['db-0000', 'primary']);
  });
});
