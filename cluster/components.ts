import { join } from 'node:path';
import type { Pki } from './pki.ts';

/** Loopback ports of one local cluster; every one is free when chosen, so clusters can run side by side. */
export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
}

export interface Layout {
  dir: string;
  bin: string;
  pki: Pki;
  ports: Ports;
  kubeconfig: string;
  /** Where the apiserver listens and what it advertises: loopback, or the real node's bridge address (pods must
   * reach it through the kubernetes Service, whose endpoint cannot be loopback). */
  address: string;
  /** kube-controller-manager's --controllers, when not all of them (the default "*"). */
  controllers?: string;
}

export interface ComponentSpec {
  name: string;
  command: string;
  args: string[];
  /** URL whose 200 answer means the component is ready (none: started is ready). */
  health?: string;
  /** Added to the environment it inherits. */
  env?: Record<string, string>;
}

const loopback = '127.0.0.1';
export const serviceAccountIssuer = 'https://kubernetes.default.svc.cluster.local';

export function etcd({ dir, bin, ports }: Layout): ComponentSpec {
  const client = `http://${loopback}:${ports.etcdClient}`;
  const peer = `http://${loopback}:${ports.etcdPeer}`;
  return {
    name: 'etcd',
    command: join(bin, 'etcd'),
    args: [
      '--name=keelson', `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${client}`, `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`, `--initial-advertise-peer-urls=${peer}`, `--initial-cluster=keelson=${peer}`,
      // A test cluster's data is throwaway: durability costs seconds per test run and buys nothing.
      '--unsafe-no-fsync', '--log-level=warn',
    ],
    health: `${client}/health`,
  };
}

export function kubeApiserver({ dir, bin, pki, ports, address }: Layout): ComponentSpec {
  return {
    name: 'kube-apiserver',
    command: join(bin, 'kube-apiserver'),
    args: [
      `--etcd-servers=http://${loopback}:${ports.etcdClient}`,
      `--advertise-address=${address}`, `--bind-address=${address}`, `--secure-port=${ports.apiserver}`,
      `--cert-dir=${join(dir, 'apiserver')}`,
      `--tls-cert-file=${pki.apiserverCert}`, `--tls-private-key-file=${pki.apiserverKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--authorization-mode=Node,RBAC',
      `--service-account-issuer=${serviceAccountIssuer}`,
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--service-cluster-ip-range=10.0.0.0/24', '--allow-privileged=true',
      '--kubelet-preferred-address-types=InternalIP',
      `--kubelet-client-certificate=${pki.kubeletCert}`, `--kubelet-client-key=${pki.kubeletKey}`,
      // As hardened clusters do: setting blockOwnerDeletion needs update on the owner's finalizers. The other two
      // let a namespace ask for simulated pods: its annotations add the kwok nodes' selector and toleration.
      '--enable-admission-plugins=OwnerReferencesPermissionEnforcement,PodNodeSelector,PodTolerationRestriction',
      // ConfigMap watches are served by etcd itself, so compacting etcd yields a real 410 Gone for tests.
      '--watch-cache-sizes=configmaps#0',
    ],
    health: `https://${address}:${ports.apiserver}/readyz`,
  };
}

function kubeconfigFlags(kubeconfig: string): string[] {
  return [`--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`];
}

export function kubeControllerManager({ dir, bin, pki, ports, kubeconfig, controllers = '*' }: Layout): ComponentSpec {
  return {
    name: 'kube-controller-manager',
    command: join(bin, 'kube-controller-manager'),
    args: [
      ...kubeconfigFlags(kubeconfig),
      `--bind-address=${loopback}`, `--secure-port=${ports.controllerManager}`,
      `--cert-dir=${join(dir, 'controller-manager')}`, '--leader-elect=false',
      `--service-account-private-key-file=${pki.serviceAccountKey}`, `--root-ca-file=${pki.caCert}`,
      '--use-service-account-credentials=true', `--controllers=${controllers}`,
    ],
    health: `https://${loopback}:${ports.controllerManager}/healthz`,
  };
}

export function kubeScheduler({ dir, bin, ports, kubeconfig }: Layout): ComponentSpec {
  return {
    name: 'kube-scheduler',
    command: join(bin, 'kube-scheduler'),
    args: [
      ...kubeconfigFlags(kubeconfig),
      `--bind-address=${loopback}`, `--secure-port=${ports.scheduler}`,
      `--cert-dir=${join(dir, 'scheduler')}`, '--leader-elect=false',
    ],
    health: `https://${loopback}:${ports.scheduler}/healthz`,
  };
}

/** Kinds kwok reads from the cluster, so tests can set logs, exec and pod lifecycles per case. */
export const kwokCustomResources = ['Stage', 'Logs', 'ClusterLogs', 'Exec', 'ClusterExec', 'Attach', 'ClusterAttach'];
export const kwokNodeAnnotation = 'kwok.x-k8s.io/node';
/** kwok's convention for simulated nodes, which the local cluster follows when it has a real node too. */
export const simulatedNodeTaint = { key: kwokNodeAnnotation, value: 'fake', effect: 'NoSchedule' };

/** A namespace with these annotations has its pods scheduled onto the kwok nodes only (with or without a real node). */
export const simulatedPodsAnnotations = {
  'scheduler.alpha.kubernetes.io/node-selector': 'type=kwok',
  'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([{ ...simulatedNodeTaint, operator: 'Equal' }]),
};

export function kwok({ bin, pki, ports, kubeconfig }: Layout): ComponentSpec {
  return {
    name: 'kwok',
    command: join(bin, 'kwok'),
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--manage-nodes-with-annotation-selector=${kwokNodeAnnotation}=fake`,
      `--node-ip=${loopback}`, `--node-port=${ports.kwok}`, `--server-address=${loopback}:${ports.kwok}`,
      `--tls-cert-file=${pki.kubeletCert}`, `--tls-private-key-file=${pki.kubeletKey}`,
      `--enable-crds=${kwokCustomResources.join(',')}`,
      // Renew node Leases as kubelets do; without them nodes go NotReady 50 s after each status heartbeat.
      '--node-lease-duration-seconds=40',
    ],
    health: `http://${loopback}:${ports.kwok}/healthz`,
  };
}
