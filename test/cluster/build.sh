#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from the pinned Go
# modules into a cache keyed by those pins and this recipe, shared by every checkout on the machine.
# Prints the bin directory. Set KEELSON_CLUSTER_BIN to use binaries you already have instead.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${KEELSON_CLUSTER_BIN:-}" ]; then
  echo "$KEELSON_CLUSTER_BIN"
  exit 0
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
key=$( (cat "$here/k8s/go.mod" "$here/k8s/go.sum" "$here/kwok/go.mod" "$here/kwok/go.sum" "$0"; go version) \
  | sha256sum | cut -c1-16)
bin="${XDG_CACHE_HOME:-$HOME/.cache}/keelson/cluster/$key/bin"
commands=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

complete=yes
for c in "${commands[@]}"; do [ -x "$bin/$c" ] || complete=no; done
if [ "$complete" = yes ]; then
  echo "$bin"
  exit 0
fi

started=$(date +%s)
staging="$bin.partial.$$"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging"

version=$(cd "$here/k8s" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
IFS=. read -r major minor _ <<<"${version#v}"
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

echo "building Kubernetes $version control plane into $bin (once per pinned version)" >&2
(cd "$here/k8s" && go build -trimpath -ldflags "-s -w$stamp" -o "$staging/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
(cd "$here/k8s" && go build -trimpath -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3)
(cd "$here/kwok" && go build -trimpath -ldflags "-s -w" -o "$staging/kwok" sigs.k8s.io/kwok/cmd/kwok)

# kwok ships its stage definitions and CRDs as YAML inside its module; the harness applies them from here.
kwok_dir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
mkdir -p "$staging/kwok-stages" "$staging/kwok-crds"
cp "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml \
  "$kwok_dir"/kustomize/stage/pod/fast/pod-*.yaml "$staging/kwok-stages/"
cp "$kwok_dir"/kustomize/crd/bases/*.yaml "$staging/kwok-crds/"
chmod -R u+w "$staging"

mkdir -p "$(dirname "$bin")"
rm -rf "$bin"
mv "$staging" "$bin"
# Builds for earlier pins are dead weight (about 400 MB each).
find "$(dirname "$(dirname "$bin")")" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
echo "built in $(( $(date +%s) - started ))s" >&2
echo "$bin"
