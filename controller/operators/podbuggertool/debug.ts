// The debug container a PodBuggerTool adds: its name, its security profile, and which pods it goes to.
import { createHash } from 'node:crypto';
import type { EphemeralContainer } from '../../runtime/core.ts';
import type { LabelSelector } from '../../runtime/selectors.ts';
import { debugProfiles, privilegedProfiles, type PodBuggerToolSpec } from './schema.ts';

/** The spec's selector: `label` ("key=value") as matchLabels, or `selector` as given. */
export function selectorOf(spec: Pick<PodBuggerToolSpec, 'label' | 'selector'>): LabelSelector {
  if (spec.label) {
    const eq = spec.label.indexOf('=');
    return { matchLabels: { [spec.label.slice(0, eq)]: spec.label.slice(eq + 1) } };
  }
  return spec.selector ?? {};
}

/** The repository-less, tag-less, digest-less name of an image: registry:5000/team/busybox:1.36@sha256:… → busybox. */
export function imageBaseName(image: string): string {
  const withoutDigest = image.split('@')[0]!;
  const lastSegment = withoutDigest.slice(withoutDigest.lastIndexOf('/') + 1);
  return lastSegment.split(':')[0]!;
}

function dnsLabelPart(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
}

/**
 * The debug container's name: a valid DNS-1123 label that says which PodBuggerTool added which image
 * (`<tool>-<image>-<hash>`), the same every time, with a hash of both so two tools never collide.
 */
export function containerName(tool: string, image: string): string {
  const hash = createHash('sha256').update(`${tool}\u0000${image}`).digest('hex').slice(0, 6);
  const readable = [dnsLabelPart(tool), dnsLabelPart(imageBaseName(image))].filter(Boolean).join('-');
  return `${readable.slice(0, 63 - hash.length - 1).replace(/-+$/, '')}-${hash}`.replace(/^-/, '');
}

type SecurityContext = Record<string, unknown>;

/** What `kubectl debug --profile` sets on an ephemeral container. */
export function securityContextFor(profile: PodBuggerToolSpec['profile']): SecurityContext | undefined {
  switch (profile) {
    case 'general': return { capabilities: { add: ['SYS_PTRACE'] } };
    case 'baseline': return undefined;
    case 'restricted': return { runAsNonRoot: true, allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } };
    case 'netadmin': return { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } };
    case 'sysadmin': return { privileged: true };
  }
}

/** Marks a debug container with the tool that added it, so each tool adds one per pod whatever its spec becomes. */
export const markerVariable = 'KEELSON_PODBUGGERTOOL';

export function debugContainer(tool: string, spec: PodBuggerToolSpec, target: string): EphemeralContainer {
  const securityContext = securityContextFor(spec.profile);
  return {
    name: containerName(tool, spec.image),
    image: spec.image,
    ...(spec.command ? { command: spec.command } : {}),
    ...(spec.args ? { args: spec.args } : {}),
    stdin: true,
    tty: true,
    targetContainerName: target,
    env: [{ name: markerVariable, value: tool }],
    ...(securityContext ? { securityContext } : {}),
  };
}

/**
 * The apiserver's refusal of a debug container, or undefined when the error is worth retrying: a conflict (a stale
 * pod), 404 (the cache has not seen the pod go, or come back), 429 (throttled) and 5xx pass, and only what the same
 * request would meet again (a validation or policy refusal) is reported.
 */
export function refusalOf(error: { status: number; message: string }): string | undefined {
  const retried = [404, 409, 429];
  return error.status >= 400 && error.status < 500 && !retried.includes(error.status) ? error.message : undefined;
}

/** What the install lets any PodBuggerTool ask for, whatever its requester may do. */
export interface DebugPolicy {
  profiles: readonly string[];
  /** Image references must start with one of these; empty allows any image. */
  imagePrefixes: readonly string[];
}

/** Reads --podbuggertool-allowed-profiles and --podbuggertool-allowed-images; throws on a profile that does not exist. */
export function parseDebugPolicy(profiles: string | undefined, images: string | undefined): DebugPolicy {
  const list = (text: string | undefined) => (text ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  const allowed = profiles === undefined ? debugProfiles.filter((p) => !(privilegedProfiles as readonly string[]).includes(p))
    : list(profiles);
  const unknown = allowed.filter((p) => !(debugProfiles as readonly string[]).includes(p));
  if (unknown.length) {
    throw new Error(`--podbuggertool-allowed-profiles: unknown ${unknown.join(', ')} (known: ${debugProfiles.join(', ')})`);
  }
  return { profiles: allowed, imagePrefixes: list(images) };
}

/**
 * A reference with its registry and repository spelt out, as the container runtime reads it: "busybox:1" is
 * "docker.io/library/busybox:1", "team/tool" is "docker.io/team/tool"; a first part with a dot or a port, or
 * "localhost", is a registry.
 */
export function fullReference(image: string): string {
  const slash = image.indexOf('/');
  const first = slash < 0 ? '' : image.slice(0, slash);
  if (first && (/[.:]/.test(first) || first === 'localhost')) return image;
  return `docker.io/${slash < 0 ? 'library/' : ''}${image}`;
}

/**
 * Whether `image` starts with `prefix`, both spelt out in full, at a boundary of the reference: "registry.corp/debug"
 * allows "registry.corp/debug/busybox:1" and "registry.corp/debug:1", not "registry.corp/debugger" nor
 * "registry.corp.evil/x"; "busybox" allows "busybox:1.36", not "busybox/evil" (another Docker Hub user's).
 */
function startsWithPrefix(image: string, prefix: string): boolean {
  const [full, start] = [fullReference(image), fullReference(prefix)];
  if (!full.startsWith(start)) return false;
  if (start.endsWith('/') || full.length === start.length) return true;
  // A prefix naming an image ends where its tag or digest begins; one naming a repository path, at a slash.
  return ':@'.includes(full[start.length]!) || (prefix.includes('/') && full[start.length] === '/');
}

/** Why the install refuses this spec (nothing is added to any pod), or undefined. */
export function policyRefusal(policy: DebugPolicy, spec: Pick<PodBuggerToolSpec, 'profile' | 'image'>):
{ reason: string; message: string } | undefined {
  if (!policy.profiles.includes(spec.profile)) {
    return { reason: 'ProfileNotAllowed', message: `profile ${spec.profile} is not allowed by this install ` +
      `(allowed: ${policy.profiles.join(', ') || 'none'}; an admin sets --podbuggertool-allowed-profiles)` };
  }
  if (policy.imagePrefixes.length && !policy.imagePrefixes.some((prefix) => startsWithPrefix(spec.image, prefix))) {
    return { reason: 'ImageNotAllowed', message: `image ${spec.image} is not allowed by this install (allowed: images ` +
      `under ${policy.imagePrefixes.join(', ')}; an admin sets --podbuggertool-allowed-images)` };
  }
  return undefined;
}
