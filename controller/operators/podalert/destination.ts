// Where a webhook may go. The URL comes from a Secret any namespace user can write, so the controller must not become
// their way into the cluster's insides, the node, or the cloud's metadata service. By default only public addresses
// are let through: loopback, private (RFC 1918, carrier-grade NAT, ULA), NAT64, link-local (where metadata services
// live), multicast and unspecified addresses are refused, and so are names that only mean something inside the
// cluster (`*.svc`, `*.cluster.local`, single labels that the resolver's search list turns into Services). An admin
// lists exceptions in --webhook-allowed-destinations (hosts, CIDRs, and `public` for every public address), and adds
// the cluster's own ranges, when they are public addresses, with --webhook-refused-destinations. A refusal is decided
// before any connection: names are checked on the addresses they resolve to, the connection goes to the address that
// was checked (no second lookup to rebind), and the message says "refused by policy" and nothing a scan could use.
import { BlockList, isIP, SocketAddress } from 'node:net';

export interface DestinationPolicy {
  /** Host names allowed by name. */
  hosts: Set<string>;
  /** CIDRs allowed, refused ranges included. */
  networks: BlockList;
  /** Whether any public address may be used. */
  public: boolean;
  /** CIDRs refused besides the built-in ranges (the cluster's own, when they are public addresses). */
  refused: BlockList;
}

/** The ranges refused unless listed, by what they are. */
const refusedRanges: [string, string, number][] = [
  ['this network', '0.0.0.0', 8], ['loopback', '127.0.0.0', 8], ['private', '10.0.0.0', 8],
  ['carrier-grade NAT', '100.64.0.0', 10], ['link-local', '169.254.0.0', 16], ['private', '172.16.0.0', 12],
  ['IETF protocol assignments', '192.0.0.0', 24], ['private', '192.168.0.0', 16], ['benchmarking', '198.18.0.0', 15],
  ['multicast', '224.0.0.0', 4], ['reserved', '240.0.0.0', 4],
  // IPv6 that carries or reaches IPv4 (IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo), refused whole, as
  // any form of it could hide a private IPv4 address; IPv4-mapped (::ffff:a.b.c.d) is judged as the IPv4 it is.
  ['unspecified', '::', 128], ['loopback', '::1', 128], ['IPv4-compatible', '::', 96], ['IPv4-translated', '::ffff:0:0:0', 96], ['NAT64', '64:ff9b::', 96],
  ['NAT64', '64:ff9b:1::', 48], ['discard', '100::', 64], ['Teredo', '2001::', 32], ['6to4', '2002::', 16],
  ['unique local', 'fc00::', 7], ['link-local', 'fe80::', 10], ['site-local', 'fec0::', 10], ['multicast', 'ff00::', 8],
];
const builtIn = refusedRanges.map(([what, address, prefix]) => {
  const list = new BlockList();
  list.addSubnet(address, prefix, isIP(address) === 4 ? 'ipv4' : 'ipv6');
  return { what, list };
});

/** Names that only resolve inside the cluster (or on the node): a Service's, localhost, a single label. */
function clusterInternalName(host: string): boolean {
  if (isIP(host)) return false;
  const name = host.toLowerCase().replace(/\.$/, '');
  return !name.includes('.') || name === 'localhost' || name.endsWith('.localhost') || /\.svc(\.|$)/.test(name) ||
    name.endsWith('.cluster.local');
}

function parseList(flag: string, text: string | undefined, { hosts }: { hosts: boolean }):
{ hosts: Set<string>; networks: BlockList; public: boolean } {
  const networks = new BlockList();
  const names = new Set<string>();
  let anyPublic = false;
  for (const entry of (text ?? '').split(',').map((e) => e.trim()).filter(Boolean)) {
    const [address, bits] = entry.split('/');
    const family = isIP(address!);
    if (!family) {
      if (!hosts || bits !== undefined) throw new Error(`--${flag}: "${entry}" is not a ${hosts ? 'host nor a ' : ''}CIDR`);
      if (entry === 'public') anyPublic = true;
      else names.add(entry.toLowerCase());
      continue;
    }
    const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
    if (!/^\d+$/.test(bits ?? '0') || prefix > (family === 4 ? 32 : 128)) {
      throw new Error(`--${flag}: "${entry}" has no valid prefix length`);
    }
    networks.addSubnet(address!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { hosts: names, networks, public: anyPublic };
}

/**
 * Reads --webhook-allowed-destinations ("public,alertmanager.monitoring.svc,10.96.0.0/12"; unset means `public`)
 * and --webhook-refused-destinations (CIDRs).
 */
export function parseDestinations(allowed: string | undefined, refused?: string): DestinationPolicy {
  const list = parseList('webhook-allowed-destinations', allowed ?? 'public', { hosts: true });
  return { ...list, refused: parseList('webhook-refused-destinations', refused, { hosts: false }).networks };
}

/** An IPv4-mapped address (::ffff:a.b.c.d, in any spelling) is judged as the IPv4 address it is. */
function plain(address: string): { address: string; type: 'ipv4' | 'ipv6' } {
  if (isIP(address) === 4) return { address, type: 'ipv4' };
  // SocketAddress writes every spelling of a mapped address as ::ffff:a.b.c.d.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(new SocketAddress({ address, family: 'ipv6' }).address);
  return mapped ? { address: mapped[1]!, type: 'ipv4' } : { address, type: 'ipv6' };
}

/**
 * What a refusal says wherever a requester reads it: the same whatever the destination was, so that neither what an
 * internal name resolves to nor whether a port answers can be learnt from it. Why, in detail, goes to the log only.
 */
export const refusedByPolicy = 'the webhook destination was refused by policy (an admin may list it in --webhook-allowed-destinations)';

/** What the address is, when it is not a public address; undefined when it is. */
function nonPublic(policy: DestinationPolicy, ip: string, type: 'ipv4' | 'ipv6'): string | undefined {
  if (policy.refused.check(ip, type)) return 'one of the cluster\'s own ranges';
  return builtIn.find(({ list }) => list.check(ip, type))?.what;
}

/** Why a URL naming `host` is refused before its name is even looked up (for the log), or undefined. */
export function nameRefusal(policy: DestinationPolicy, host: string): string | undefined {
  if (policy.hosts.has(host.toLowerCase()) || !clusterInternalName(host)) return undefined;
  return 'a name inside the cluster';
}

/** Why a connection to `address` (for a URL naming `host`) is refused (for the log), or undefined when it may go. */
export function refusal(policy: DestinationPolicy, host: string, address: string): string | undefined {
  if (policy.hosts.has(host.toLowerCase())) return undefined;
  const { address: ip, type } = plain(address);
  if (policy.networks.check(ip, type)) return undefined;
  const byName = nameRefusal(policy, host);
  if (byName) return byName;
  const what = nonPublic(policy, ip, type);
  if (what) return `${ip}: ${what}`;
  return policy.public ? undefined : `${ip}: not among the allowed destinations`;
}
