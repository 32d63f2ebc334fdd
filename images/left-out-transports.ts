// Stands in, in the image's bundle, for the transports client-node imports for its fetch path and its proxy agents:
// undici, socks and hpagent. The controller never runs either: RestClient makes its own HTTPS agent and refuses a
// cluster's proxy-url. Loaded, they held about 7 MiB of the controller's resident memory at rest
// (bench/results/before-after/left-out-transports.md). Only the bundle, whose whole program is Keelson's, leaves
// them out: the runtime as a library may share its process with code that uses client-node's fetch.
function leftOut(): never {
  throw new Error('the controller image leaves out client-node\'s fetch and proxy transports (images/bundle.ts)');
}

class LeftOut {
  constructor() {
    leftOut();
  }
}

export { leftOut as fetch, LeftOut as Agent, LeftOut as ProxyAgent, LeftOut as SocksProxyAgent, LeftOut as SocksClient,
  LeftOut as HttpProxyAgent, LeftOut as HttpsProxyAgent };
