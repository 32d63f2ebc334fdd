// The Dockerfile's final stage states the operator image's runtime settings; the recipe here takes them from it, so
// users who build with Docker get the settings that the tested image has.
import type { ImageConfig } from './oci.ts';

/** USER, WORKDIR, ENV, ENTRYPOINT, CMD and EXPOSE of the final stage, and the base image it starts FROM. */
export function parseDockerfile(text: string): ImageConfig & { from: string } {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const finalFrom = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  if (finalFrom < 0) throw new Error('the Dockerfile has no FROM');
  const config: ImageConfig & { from: string } = { from: lines[finalFrom]!.split(/\s+/)[1]! };
  for (const line of lines.slice(finalFrom + 1)) {
    const [, instruction, rest] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    switch (instruction?.toUpperCase()) {
      case 'USER': config.user = rest!; break;
      case 'WORKDIR': config.workingDir = rest!; break;
      case 'ENV':
        for (const [, name, value] of rest!.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
          config.env = { ...config.env, [name!]: value!.replace(/^"|"$/g, '') };
        }
        break;
      case 'ENTRYPOINT': config.entrypoint = JSON.parse(rest!); break;
      case 'CMD': config.cmd = JSON.parse(rest!); break;
      case 'EXPOSE': config.exposedPorts = rest!.split(/\s+/).map((p) => Number.parseInt(p, 10)); break;
    }
  }
  return config;
}
