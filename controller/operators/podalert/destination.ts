// Where a webhook may go. The URL comes from a Secret any namespace user can write, so the controller must not become
// their way to the cloud's metadata service or the cluster's insides: link-local addresses (169.254.0.0/16, fe80::/10,
// where metadata services live) are refused unless allowed by name, and --webhook-allowed-destinations restricts
// webhooks to the hosts and CIDRs it lists. A refusal is decided before any connection: names are checked on the
// addresses they resolve to, and the connection goes to the address that was checked (no second lookup to rebind).
import { BlockList, isIP } from 'node:net';

export interface DestinationPolicy {
  /** Host names allowed by name. */
  hosts: Set<string>;
  /** CIDRs allowed; undefined when no list was given (anything but link-local). */
  networks: BlockList | undefined;
}

const linkLocal = new BlockList();
linkLocal.addSubnet('169.254.0.0', 16, 'ipv4');
linkLocal.addSubnet('fe80::', 10, 'ipv6');

/** Reads "hooks.slack.com,10.0.0.0/8,fd00::/8"; an empty list means no restriction beyond link-local. */
export function parseDestinations(text: string | undefined): DestinationPolicy {
  const entries = (text ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  if (entries.length === 0) return { hosts: new Set(), networks: undefined };
  const networks = new BlockList();
  const hosts = new Set<string>();
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const family = isIP(address!);
    if (!family) {
      if (bits !== undefined) throw new Error(`--webhook-allowed-destinations: "${entry}" is neither a host nor a CIDR`);
      hosts.add(entry.toLowerCase());
      continue;
    }
    const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
      throw new Error(`--webhook-allowed-destinations: "${entry}" has no valid prefix length`);
    }
    networks.addSubnet(address!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { hosts, networks };
}

/** An IPv4 address carried in IPv6 (::ffff:169.254.169.254) is judged as the IPv4 address it is. */
function plain(address: string): { address: string; type: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1]!, type: 'ipv4' };
  return { address, type: isIP(address) === 4 ? 'ipv4' : 'ipv6' };
}

/** Why a connection to `address` (for a URL naming `host`) is refused, or undefined when it may go. */
export function refusal(policy: DestinationPolicy, host: string, address: string): string | undefined {
  const byName = policy.hosts.has(host.toLowerCase());
  const { address: ip, type } = plain(address);
  if (byName) return undefined;
  if (policy.networks) {
    return policy.networks.check(ip, type) ? undefined : `${ip} is not among the allowed webhook destinations`;
  }
  return linkLocal.check(ip, type) ? `${ip} is link-local (a metadata service's range): refused` : undefined;
}
