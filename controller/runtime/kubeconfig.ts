// Loads a KubeConfig without the generated API clients. client-node's KubeConfig module imports the generated client
// for every API group (27 MiB of heap and 46 MiB resident more than it needs; bench/results/before-after) only to build
// a request configuration, which Keelson never uses: it speaks REST itself (rest.ts). A resolve hook points that one
// import at the two generated modules it names, so KubeConfig behaves as it does everywhere else.
import { registerHooks } from 'node:module';
import type { KubeConfig } from '@kubernetes/client-node';

/** The import of the generated clients' index, in the module that makes it (a URL or a path), and its stand-in. */
export const generatedIndex = './gen/index.js';
export const kubeConfigModule = /[/\\]@kubernetes[/\\]client-node[/\\]dist[/\\]config\.js$/;
export const slimIndex = new URL('./kubeconfig-generated.js', import.meta.url);

let hooked = false;

async function kubeConfigClass(): Promise<typeof KubeConfig> {
  if (!hooked) {
    registerHooks({
      resolve: (specifier, context, nextResolve) =>
        specifier === generatedIndex && kubeConfigModule.test(context.parentURL ?? '')
          ? nextResolve(slimIndex.href, context)
          : nextResolve(specifier, context),
    });
    hooked = true;
  }
  return (await import('@kubernetes/client-node/dist/config.js')).KubeConfig;
}

/** A KubeConfig from `file`, or, without one, from the Pod's service account. */
export async function loadKubeConfig(file: string | undefined): Promise<KubeConfig> {
  const config = new (await kubeConfigClass())();
  if (file) config.loadFromFile(file);
  else config.loadFromCluster();
  return config;
}
