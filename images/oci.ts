// OCI images without Docker or a registry: a root filesystem from Debian's packages (mmdebstrap, extract only: no
// package manager, shell or maintainer scripts in the image) plus the recipe's own files, packed as one layer with
// fixed ownership and times, and written as an OCI image layout by umoci, the OCI project's own image tool. Same
// inputs, same bytes: the digest identifies what went in.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The parts of an OCI image config a recipe sets (the Dockerfile's words for them). */
export interface ImageConfig {
  user?: string;
  workingDir?: string;
  env?: Record<string, string>;
  entrypoint?: string[];
  cmd?: string[];
  exposedPorts?: number[];
}

export interface ImageRecipe {
  /**
   * The reference pods name: the operator's release reference, which this build is, or a stand-in's own
   * (keelson.local/...), never a public image's name it is not.
   */
  reference: string;
  /** Debian packages whose files, with their dependencies', make the base (none: an empty base). */
  debianPackages: string[];
  /** The Debian release they come from (default bookworm, the machine's own). */
  debianSuite?: 'bookworm' | 'trixie';
  /** Anything else that decides the image's content (files' digests, versions), for the build cache's key. */
  inputs(): Promise<string[]>;
  /** Adds the recipe's own files to the root filesystem. */
  populate(root: string): Promise<void>;
  config: ImageConfig;
}

export interface BuiltImage {
  reference: string;
  /** The manifest's digest: what `crictl images --digests` and a registry would show. */
  digest: string;
  /** Compressed size of the layers, as a registry would store them. */
  compressedBytes: number;
  /** An OCI image layout as a tar archive, for `ctr images import`. */
  archive: string;
}

// Every file in every image carries this time, so a rebuild of the same inputs is byte for byte the same.
const epoch = '0';

async function sh(command: string, args: string[], cwd?: string): Promise<string> {
  const { stdout } = await run(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 20 * 60_000,
    env: { ...process.env, SOURCE_DATE_EPOCH: epoch } });
  return stdout;
}

/** A deterministic tar of `dir`'s content: sorted names, fixed times and owners, file capabilities kept. */
async function deterministicTar(dir: string, archive: string): Promise<void> {
  await sh('tar', ['--sort=name', `--mtime=@${epoch}`, '--clamp-mtime', '--owner=0', '--group=0', '--numeric-owner',
    '--xattrs', '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime', '--format=posix',
    '-C', dir, '-cf', archive, '.']);
}

async function debianRoot(root: string, packages: string[], suite: string): Promise<void> {
  if (packages.length === 0) return mkdir(root, { recursive: true }).then(() => undefined);
  await sh('mmdebstrap', ['--quiet', '--variant=extract', `--include=${packages.join(',')}`, '--skip=output/dev',
    suite, root]);
  // Releases since trixie ship everything under /usr, and the links from / to it are made by an install, which
  // extraction is not: without them there is no /lib64 for the dynamic loader, nor /bin.
  if (suite !== 'bookworm') {
    for (const dir of ['bin', 'lib', 'lib64', 'sbin']) await symlink(`usr/${dir}`, join(root, dir)).catch(() => {});
  }
  // What extraction leaves of the build host and of apt; an image has no use for either.
  for (const leftover of ['etc/apt', 'etc/hostname', 'etc/resolv.conf', 'var/lib/apt', 'var/cache/apt', 'var/log/apt',
    'var/lib/dpkg', 'etc/dpkg', 'usr/share/doc', 'usr/share/man', 'usr/share/lintian', 'usr/share/info']) {
    await rm(join(root, leftover), { recursive: true, force: true });
  }
}

function configFlags(config: ImageConfig): string[] {
  const flags = [`--created=1970-01-01T00:00:00Z`, '--architecture=amd64', '--os=linux'];
  if (config.user) flags.push(`--config.user=${config.user}`);
  if (config.workingDir) flags.push(`--config.workingdir=${config.workingDir}`);
  for (const [name, value] of Object.entries(config.env ?? {})) flags.push(`--config.env=${name}=${value}`);
  for (const part of config.entrypoint ?? []) flags.push(`--config.entrypoint=${part}`);
  for (const part of config.cmd ?? []) flags.push(`--config.cmd=${part}`);
  for (const port of config.exposedPorts ?? []) flags.push(`--config.exposedports=${port}/tcp`);
  return flags;
}

function splitReference(reference: string): { repository: string; tag: string } {
  const colon = reference.lastIndexOf(':');
  return { repository: reference.slice(0, colon), tag: reference.slice(colon + 1) };
}

function imageCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'keelson', 'images');
}

/** Builds `recipe` unless the cache holds a build of the same inputs. */
export async function buildImage(recipe: ImageRecipe, log: (line: string) => void = () => {}): Promise<BuiltImage> {
  const key = createHash('sha256').update(JSON.stringify([recipe.reference, recipe.debianPackages,
    ...recipe.debianSuite ? [recipe.debianSuite] : [], recipe.config,
    await recipe.inputs()])).digest('hex').slice(0, 16);
  const { repository, tag } = splitReference(recipe.reference);
  const cached = join(imageCacheDir(), `${repository.replaceAll('/', '_')}-${tag}-${key}`);
  if (existsSync(join(cached, 'image.json'))) return JSON.parse(await readFile(join(cached, 'image.json'), 'utf8'));

  const started = Date.now();
  log(`building image ${recipe.reference}`);
  await mkdir(imageCacheDir(), { recursive: true });
  const work = await mkdtemp(join(tmpdir(), 'keelson-image-'));
  try {
    const root = join(work, 'rootfs');
    await debianRoot(root, recipe.debianPackages, recipe.debianSuite ?? 'bookworm');
    await recipe.populate(root);
    const layer = join(work, 'layer.tar');
    await deterministicTar(root, layer);
    const layout = join(work, 'oci');
    await sh('umoci', ['init', '--layout', layout]);
    await sh('umoci', ['new', '--image', `${layout}:${tag}`]);
    await sh('umoci', ['raw', 'add-layer', '--no-history', '--image', `${layout}:${tag}`, layer]);
    await sh('umoci', ['config', '--no-history', '--image', `${layout}:${tag}`, ...configFlags(recipe.config)]);
    await sh('umoci', ['gc', '--layout', layout]);
    // containerd names an imported image by this annotation; umoci's own is the bare tag.
    const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8'));
    index.manifests[0].annotations = { 'io.containerd.image.name': normalizedReference(recipe.reference),
      'org.opencontainers.image.ref.name': tag };
    await writeFile(join(layout, 'index.json'), JSON.stringify(index));
    const digest = index.manifests[0].digest as string;
    const manifest = JSON.parse(await readFile(join(layout, 'blobs', ...digest.split(':')), 'utf8'));
    const compressedBytes = (manifest.layers as { size: number }[]).reduce((sum, l) => sum + l.size, 0);

    const staging = `${cached}.partial-${process.pid}`;
    await mkdir(staging, { recursive: true });
    const archive = join(cached, 'image.tar');
    await deterministicTar(layout, join(staging, 'image.tar'));
    const built: BuiltImage = { reference: recipe.reference, digest, compressedBytes, archive };
    await writeFile(join(staging, 'image.json'), JSON.stringify(built, null, 2));
    await rm(cached, { recursive: true, force: true });
    await rename(staging, cached);
    // Earlier builds of this reference are dead weight (the operator's is rebuilt on every code change).
    const prefix = basename(cached).slice(0, -key.length);
    const stale = (await readdir(imageCacheDir()))
      .filter((entry) => entry.startsWith(prefix) && entry !== basename(cached) && !entry.includes('.partial-'));
    await Promise.all(stale.map((entry) => rm(join(imageCacheDir(), entry), { recursive: true, force: true })));
    log(`built image ${recipe.reference} in ${((Date.now() - started) / 1000).toFixed(0)}s: ${digest}, ` +
      `${megabytes(compressedBytes)} compressed`);
    return built;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The reference as the kubelet and containerd spell it: docker.io/ for a bare name, library/ for a single one. */
export function normalizedReference(reference: string): string {
  const first = reference.split('/')[0]!;
  const hasRegistry = reference.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return reference;
  return `docker.io/${reference.includes('/') ? '' : 'library/'}${reference}`;
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The sha256 of a file's bytes, for recipes' inputs. */
export async function fileDigest(path: string): Promise<string> {
  return createHash('sha256').update(await readFile(path)).digest('hex');
}

/** A digest over every file below `dir` (names, modes and contents), for recipes' inputs. */
export async function treeDigest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  const listing = await sh('find', [dir, '-type', 'f', '-printf', '%P %m\\n']);
  for (const line of listing.split('\n').filter(Boolean).sort()) {
    hash.update(line).update(await readFile(join(dir, line.slice(0, line.lastIndexOf(' ')))));
  }
  return hash.digest('hex');
}
