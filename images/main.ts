// `npm run image [-- NAME...]`: builds the operator image (or the named images of the local cluster) from the
// package registries and prints each one's reference, digest, size and OCI archive.
import { buildImage, megabytes } from './oci.ts';
import { clusterImages } from './recipes.ts';

const names = process.argv.slice(2);
for (const name of names.length ? names : ['controller']) {
  const recipe = clusterImages[name];
  if (!recipe) {
    console.error(`unknown image ${name} (known: ${Object.keys(clusterImages).join(', ')})`);
    process.exit(2);
  }
  const image = await buildImage(await recipe(), (line) => console.error(line));
  console.log(`${image.reference}\n  digest     ${image.digest}\n  compressed ${megabytes(image.compressedBytes)}` +
    `\n  archive    ${image.archive}`);
}
