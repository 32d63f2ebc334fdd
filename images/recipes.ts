// The images Keelson and its local cluster run, built from the package registries: the operator, and stand-ins the
// tests and samples use under names of their own (keelson.local/...), never tagged as a public image they are not.
import { execFile } from 'node:child_process';
import { chmod, copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { agentArtifact, fetchAgent } from '../controller/operators/prometheusjmxexporter/agent.ts';
import { releaseImage } from '../controller/api/release.ts';
import { javaAppSource, sampleImages } from '../controller/api/samples.ts';
import { repoRoot } from '../cluster/paths.ts';
import { parseDockerfile } from './dockerfile.ts';
import { fileDigest, treeDigest, type ImageRecipe } from './oci.ts';
import { bundleFolder, bundleImageEntries } from './bundle.ts';

const run = promisify(execFile);
const path = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

async function users(root: string, extra: string[] = []): Promise<void> {
  await mkdir(join(root, 'etc'), { recursive: true });
  await writeFile(join(root, 'etc/passwd'), ['root:x:0:0:root:/root:/sbin/nologin',
    'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin', ...extra.map((u) => u.split('|')[0])].join('\n') + '\n');
  await writeFile(join(root, 'etc/group'), ['root:x:0:', 'nogroup:x:65534:', ...extra.map((u) => u.split('|')[1])]
    .join('\n') + '\n');
  await mkdir(join(root, 'tmp'), { recursive: true });
  await chmod(join(root, 'tmp'), 0o1777);
}

/** The operator: the bundled controller on the pinned Node 24 and glibc from Debian, as the Dockerfile states. */
export async function controllerImage(): Promise<ImageRecipe> {
  const { from, ...dockerfile } = parseDockerfile(await readFile(join(repoRoot, 'Dockerfile'), 'utf8'));
  const node = join(repoRoot, 'node_modules/node/bin/node');
  const compiled = join(repoRoot, 'build/controller');
  return {
    reference: releaseImage,
    debianPackages: ['libc6', 'libstdc++6', 'libgcc-s1'],
    inputs: async () => [from, await fileDigest(node), await fileDigest(join(repoRoot, 'package-lock.json')),
      ...await Promise.all(['package.json', 'build/images/bundle.js', 'build/images/controller-tree.js',
        'build/images/left-out-transports.js'].map((file) => fileDigest(join(repoRoot, file)))),
      await treeDigest(compiled), agentArtifact.sha256],
    populate: async (root) => {
      await users(root, ['nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin|nonroot:x:65532:']);
      await mkdir(join(root, 'usr/local/bin'), { recursive: true });
      await copyFile(node, join(root, 'usr/local/bin/node'));
      const app = join(root, dockerfile.workingDir!);
      await mkdir(app, { recursive: true });
      await copyFile(join(repoRoot, 'package.json'), join(app, 'package.json'));
      // Bundled as the Dockerfile's build stage bundles; the image carries the bundle alone. The tree sits in the
      // checkout, so that the paths the bundle names (relative to the tree) are the same wherever that is.
      const tree = await mkdtemp(join(repoRoot, 'build/.image-tree-'));
      try {
        await cp(compiled, tree, { recursive: true });
        await cp(await bundleImageEntries(tree), join(app, 'build/controller', bundleFolder), { recursive: true });
      } finally {
        await rm(tree, { recursive: true, force: true });
      }
      const jar = dockerfile.env!.KEELSON_JMX_EXPORTER_AGENT!;
      await mkdir(join(root, jar, '..'), { recursive: true });
      await copyFile(await fetchAgent(), join(root, jar));
    },
    config: { ...dockerfile, env: { PATH: path, ...dockerfile.env } },
  };
}

async function busyboxApplets(root: string): Promise<void> {
  const bin = join(root, 'bin');
  const present = new Set(await readdir(bin));
  const { stdout } = await run(join(bin, 'busybox'), ['--list']);
  for (const applet of stdout.split('\n').filter(Boolean)) {
    if (!present.has(applet)) await symlink('busybox', join(bin, applet));
  }
}

/** A shell and the usual tools (BusyBox from Debian): debug containers, clients in tests. */
export const toolsImage: ImageRecipe = {
  reference: 'keelson.local/tools:1',
  debianPackages: ['busybox-static'],
  inputs: async () => [],
  populate: async (root) => {
    await users(root);
    await busyboxApplets(root);
  },
  config: { env: { PATH: path }, cmd: ['sh'] },
};

/** A web server answering "Hello World" on 8000, standing in for the TDSet sample's public image. */
export const helloWorldImage: ImageRecipe = {
  ...toolsImage,
  reference: 'keelson.local/hello-world:1',
  populate: async (root) => {
    await toolsImage.populate(root);
    await mkdir(join(root, 'www'));
    await writeFile(join(root, 'www/index.html'), '<pre>Hello World</pre>\n');
  },
  config: { env: { PATH: path }, user: '65534:65534', entrypoint: ['httpd', '-f', '-v', '-p', '8000', '-h', '/www'],
    exposedPorts: [8000] },
};

/** The pods' sandbox: the pause program that ships with Kubernetes, built by the node's build (build.sh node). */
export function pauseImage(pauseBinary: string): ImageRecipe {
  return {
    reference: 'keelson.local/pause:3.10',
    debianPackages: [],
    inputs: async () => [await fileDigest(pauseBinary)],
    populate: async (root) => {
      await copyFile(pauseBinary, join(root, 'pause'));
      await chmod(join(root, 'pause'), 0o755);
    },
    config: { user: '65535:65535', entrypoint: ['/pause'] },
  };
}

/**
 * PostgreSQL of `major` and pgBackRest from the Debian release that has it, run as postgres (999); BusyBox gives the
 * member scripts their shell and tools.
 */
function postgresRecipe(major: number, debianSuite: 'bookworm' | 'trixie'): ImageRecipe {
  return {
    reference: `keelson.local/postgresql:${major}`,
    debianPackages: [`postgresql-${major}`, 'pgbackrest', 'busybox-static'],
    ...debianSuite === 'bookworm' ? {} : { debianSuite },
    inputs: async () => [],
    populate: async (root) => {
      await users(root, ['postgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh|postgres:x:999:']);
      await busyboxApplets(root);
    },
    config: { user: '999:999', env: { PATH: `/usr/lib/postgresql/${major}/bin:${path}`, PGDATA: '/var/lib/postgresql/data' },
      cmd: ['postgres'], exposedPorts: [5432] },
  };
}

export const postgresImage = postgresRecipe(15, 'bookworm');
/** The next major, from Debian's next release (trixie): what a major upgrade goes to. */
export const postgres17Image = postgresRecipe(17, 'trixie');

const javaHome = '/usr/lib/jvm/java-17-openjdk-amd64';

/**
 * A JVM application (Debian's OpenJDK 17, with the jcmd an agent is loaded by) serving HTTP on 8080; with the JDK on
 * its PATH it also stands in for the public JDK image the sample runs the same source on.
 */
export const javaAppImage: ImageRecipe = {
  reference: 'keelson.local/java-app:1',
  debianPackages: ['openjdk-17-jdk-headless', 'busybox-static'],
  inputs: async () => [javaAppSource, (await run('javac', ['-version'])).stdout],
  populate: async (root) => {
    await users(root, ['app:x:65532:65532:app:/nonexistent:/sbin/nologin|app:x:65532:']);
    await busyboxApplets(root);
    const source = join(root, 'app');
    await mkdir(source);
    await writeFile(join(source, 'App.java'), javaAppSource);
    await run('javac', ['--release', '17', '-d', source, join(source, 'App.java')]);
  },
  config: { user: '65532:65532', workingDir: '/app', env: { PATH: `${javaHome}/bin:${path}`, JAVA_HOME: javaHome },
    entrypoint: ['java', '-cp', '/app', 'App'], exposedPorts: [8080] },
};

/** What the local cluster runs in place of each public image the samples name (controller/api/samples.ts). */
export const sampleStandIns: Record<string, ImageRecipe> = {
  [sampleImages.helloWorld]: helloWorldImage,
  [sampleImages.tools]: toolsImage,
  [sampleImages.postgresql]: postgresImage,
  [sampleImages.jdk]: javaAppImage,
};

/** Every image `npm run image` builds, by name. */
export const clusterImages: Record<string, () => Promise<ImageRecipe>> = {
  controller: controllerImage,
  tools: async () => toolsImage,
  'hello-world': async () => helloWorldImage,
  postgresql: async () => postgresImage,
  'postgresql-17': async () => postgres17Image,
  'java-app': async () => javaAppImage,
};
