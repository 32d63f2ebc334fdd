// What client-node's KubeConfig module takes from its generated index; kubeconfig.ts sends that import here.
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';
