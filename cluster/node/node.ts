// A real node beside the kwok nodes: containerd and runc run the containers, the CNI bridge plugin puts pods on the
// cluster's own bridge, the kubelet registers the node, kube-proxy routes Services, CoreDNS answers for them, and
// local-path-provisioner backs the default StorageClass. Every file they use lives under the cluster's folder;
// what they change outside it is owned by host.ts.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ComponentSpec } from '../components.ts';
import type { NodePki, Pki } from '../pki.ts';
import { bridge, nodeNetwork, serviceNetwork } from './host.ts';

const run = promisify(execFile);

export const realNodeName = 'keelson-node';
const clusterDnsIp = '10.0.0.10';
const sandboxImage = 'keelson.local/pause:3.10';
const storageClassName = 'local-path';
const provisionerNamespace = 'local-path-storage';

export interface NodePorts {
  kubelet: number;
  kubeletHealth: number;
  containerdMetrics: number;
  kubeProxyHealth: number;
  kubeProxyMetrics: number;
  dnsHealth: number;
  dnsReady: number;
  objectStore: number;
}

export interface NodeLayout {
  /** The cluster's folder; the node's files go to `node/` inside it. */
  dir: string;
  /** The node's binaries (build.sh node). */
  bin: string;
  /** The control plane's admin kubeconfig, for the add-ons. */
  adminKubeconfig: string;
  server: string;
  pki: Pki & { node: NodePki };
  ports: NodePorts;
}

function nodeDir(dir: string): string {
  return join(dir, 'node');
}

export function containerdSocket(dir: string): string {
  return join(nodeDir(dir), 'containerd', 'containerd.sock');
}

function kubeconfig(server: string, ca: string, identity: { cert: string; key: string }): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, 'certificate-authority': ca } }],
    users: [{ name: 'node', user: { 'client-certificate': identity.cert, 'client-key': identity.key } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'node' } }],
    'current-context': 'local',
  });
}

const containerdConfig = (root: string, bin: string, cniConf: string, ports: NodePorts) => `version = 3
root = "${root}/root"
state = "${root}/state"
[grpc]
  address = "${root}/containerd.sock"
[metrics]
  address = "127.0.0.1:${ports.containerdMetrics}"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${sandboxImage}"
[plugins.'io.containerd.cri.v1.runtime']
  # This machine withholds CAP_SYS_RESOURCE: runc cannot lower a container's oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "${bin}/runc"
      Root = "${root}/runc"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${cniConf}"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;

/** Pods get an address on the bridge and routes to it and to Services only: no way off the machine. */
const cniConfig = (state: string) => ({
  cniVersion: '1.0.0',
  name: 'keelson',
  plugins: [{
    type: 'bridge', bridge, isGateway: false, ipMasq: false, hairpinMode: true,
    ipam: {
      type: 'host-local', dataDir: join(state, 'ipam'),
      ranges: [[{ subnet: `${nodeNetwork.prefix}.0/${nodeNetwork.bits}`, rangeStart: `${nodeNetwork.prefix}.10`,
        gateway: nodeNetwork.ip }]],
      routes: [{ dst: serviceNetwork, gw: nodeNetwork.ip }],
    },
  }],
});

function kubeletConfig(layout: NodeLayout, files: string): object {
  const { pki, ports } = layout;
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration',
    address: nodeNetwork.ip, port: ports.kubelet, readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1', healthzPort: ports.kubeletHealth,
    tlsCertFile: pki.node.kubeletServing.cert, tlsPrivateKeyFile: pki.node.kubeletServing.key,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: pki.caCert } },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${containerdSocket(layout.dir)}`,
    cgroupDriver: 'cgroupfs', failCgroupV1: false, failSwapOn: false,
    clusterDNS: [clusterDnsIp], clusterDomain: 'cluster.local', resolvConf: '',
    podLogsDir: join(files, 'pod-logs'), volumePluginDir: join(files, 'volume-plugins'),
    // A test machine's disk and memory are shared with everything else: evict only when truly out.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%',
      'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 99,
    serializeImagePulls: false, maxPods: 110, staticPodPath: '',
    // The tests read crash loops; kubelet's default ceiling of 5 minutes would make them wait that long.
    crashLoopBackOff: { maxContainerRestartPeriod: '20s' },
    shutdownGracePeriod: '0s',
  };
}

function kubeProxyConfig(layout: NodeLayout, kubeconfigFile: string): object {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1', kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: kubeconfigFile },
    mode: 'iptables', hostnameOverride: realNodeName, clusterCIDR: `${nodeNetwork.prefix}.0/${nodeNetwork.bits}`,
    bindAddress: nodeNetwork.ip,
    healthzBindAddress: `127.0.0.1:${layout.ports.kubeProxyHealth}`,
    metricsBindAddress: `127.0.0.1:${layout.ports.kubeProxyMetrics}`,
    nodePortAddresses: [`${nodeNetwork.ip}/32`],
    iptables: { localhostNodePorts: false },
    // Zeros leave the host's conntrack sysctls as they are.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  };
}

const corefile = (layout: NodeLayout) => `.:53 {
    bind ${nodeNetwork.ip}
    errors
    health 127.0.0.1:${layout.ports.dnsHealth}
    ready 127.0.0.1:${layout.ports.dnsReady}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${layout.adminKubeconfig} keelson-local
        pods insecure
    }
    cache 30
    loadbalance
}
`;

/** Writes the node's configuration files and returns its components in start order. */
export async function nodeComponents(layout: NodeLayout): Promise<ComponentSpec[]> {
  const { bin, pki, server, ports } = layout;
  const files = nodeDir(layout.dir);
  const containerdRoot = join(files, 'containerd');
  const cniConf = join(files, 'cni', 'net.d');
  await mkdir(cniConf, { recursive: true });
  await mkdir(containerdRoot, { recursive: true });
  await writeFile(join(files, 'containerd.toml'), containerdConfig(containerdRoot, bin, cniConf, ports));
  await writeFile(join(cniConf, '10-keelson.conflist'), JSON.stringify(cniConfig(join(files, 'cni'))));
  const kubeletKubeconfig = join(files, 'kubelet.kubeconfig');
  await writeFile(kubeletKubeconfig, kubeconfig(server, pki.caCert, pki.node.kubeletClient), { mode: 0o600 });
  await writeFile(join(files, 'kubelet.json'), JSON.stringify(kubeletConfig(layout, files)));
  const proxyKubeconfig = join(files, 'kube-proxy.kubeconfig');
  await writeFile(proxyKubeconfig, kubeconfig(server, pki.caCert, pki.node.kubeProxy), { mode: 0o600 });
  await writeFile(join(files, 'kube-proxy.json'), JSON.stringify(kubeProxyConfig(layout, proxyKubeconfig)));
  await writeFile(join(files, 'Corefile'), corefile(layout));
  await writeFile(join(files, 'local-path.json'), JSON.stringify({
    nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [join(files, 'volumes')] }] }));

  return [
    { name: 'containerd', command: join(bin, 'containerd'), args: ['--config', join(files, 'containerd.toml')],
      health: `http://127.0.0.1:${ports.containerdMetrics}/v1/metrics` },
    { name: 'kubelet', command: join(bin, 'kubelet'), args: [
      `--config=${join(files, 'kubelet.json')}`, `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${join(files, 'kubelet')}`, `--hostname-override=${realNodeName}`, `--node-ip=${nodeNetwork.ip}`,
      `--node-labels=keelson.dev/node=real`, '--v=1'],
    health: `http://127.0.0.1:${ports.kubeletHealth}/healthz` },
    { name: 'kube-proxy', command: join(bin, 'kube-proxy'), args: [`--config=${join(files, 'kube-proxy.json')}`],
      health: `http://127.0.0.1:${ports.kubeProxyHealth}/healthz` },
    { name: 'coredns', command: join(bin, 'coredns'), args: ['-conf', join(files, 'Corefile')],
      health: `http://127.0.0.1:${ports.dnsReady}/ready` },
    { name: 'local-path-provisioner', command: join(bin, 'local-path-provisioner'), args: [
      '--debug', 'start', `--kubeconfig=${layout.adminKubeconfig}`, `--config=${join(files, 'local-path.json')}`,
      `--namespace=${provisionerNamespace}`, '--helper-image=keelson.local/tools:1',
      `--service-account-name=default`] },
  ];
}

/** Cluster objects the node's add-ons need: DNS's Service, the provisioner's scripts and the default StorageClass. */
export function nodeAddonObjects(): object[] {
  const helperPod = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'helper-pod' },
    spec: { containers: [{ name: 'helper-pod', image: 'keelson.local/tools:1', imagePullPolicy: 'Never' }] },
  };
  return [
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kube-dns', namespace: 'kube-system',
      labels: { 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS' } },
    spec: { clusterIP: clusterDnsIp, ports: [{ name: 'dns', port: 53, protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, protocol: 'TCP' }] } },
    // CoreDNS runs on the host, at the node's address: its endpoints are given, not selected.
    { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'kube-dns-host',
      namespace: 'kube-system', labels: { 'kubernetes.io/service-name': 'kube-dns',
        'endpointslice.kubernetes.io/managed-by': 'keelson-local-cluster' } },
    addressType: 'IPv4', endpoints: [{ addresses: [nodeNetwork.ip], conditions: { ready: true } }],
    ports: [{ name: 'dns', port: 53, protocol: 'UDP' }, { name: 'dns-tcp', port: 53, protocol: 'TCP' }] },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: provisionerNamespace } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'local-path-config', namespace: provisionerNamespace },
      data: {
        setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        'helperPod.yaml': JSON.stringify(helperPod),
      } },
    { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: storageClassName,
      annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'rancher.io/local-path', volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete' },
    // The apiserver's kubelet client (logs, exec, port-forward) is authorized by the kubelet through RBAC.
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding',
      metadata: { name: 'keelson-local:apiserver-kubelet-client' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:kubelet-api-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'kwok-kubelet' }] },
  ];
}

/** Loads an OCI image archive into the node's containerd, where the kubelet finds it (pods never pull). */
export async function importImage(bin: string, dir: string, archive: string): Promise<void> {
  await run(join(bin, 'ctr'), ['--address', containerdSocket(dir), '--namespace', 'k8s.io', 'images', 'import',
    archive], { timeout: 5 * 60_000, maxBuffer: 16 * 1024 * 1024 });
}
