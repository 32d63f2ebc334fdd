#!/usr/bin/env bash
# Builds a set of the local cluster's binaries from pinned Go modules into a cache keyed by those pins and this
# recipe, shared by every checkout on the machine. Prints the set's bin directory; progress goes to stderr.
#   build.sh                 the control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
#                            kubectl, kwok
#   build.sh node            a real node: kubelet, kube-proxy, containerd (with its runc shim and ctr), runc,
#                            CoreDNS, local-path-provisioner, the pause program of the pods' sandboxes, and
#                            versitygw, the S3-compatible object store beside it
# Set KEELSON_CLUSTER_BIN (or KEELSON_NODE_BIN) to use binaries you already have instead.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
set_name=${1:-control-plane}
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0

case "$set_name" in
  control-plane)
    override=${KEELSON_CLUSTER_BIN:-}
    modules=(k8s kwok)
    commands=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok) ;;
  node)
    override=${KEELSON_NODE_BIN:-}
    modules=(k8s node/runtime node/runc node/coredns node/storage node/objectstore)
    commands=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr runc coredns local-path-provisioner pause
      versitygw) ;;
  *) echo "usage: build.sh [control-plane|node]" >&2; exit 2 ;;
esac
if [ -n "$override" ]; then
  echo "$override"
  exit 0
fi

key=$( (for m in "${modules[@]}"; do cat "$here/$m/go.mod" "$here/$m/go.sum" "$here/$m"/*.go; done; cat "$0"; go version) \
  | sha256sum | cut -c1-16)
bin="${XDG_CACHE_HOME:-$HOME/.cache}/keelson/$set_name/$key/bin"

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
step() { echo "[$(( $(date +%s) - started ))s] $*" >&2; }

version=$(cd "$here/k8s" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
IFS=. read -r major minor _ <<<"${version#v}"
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
# No DWARF: the binaries are stripped anyway, and not making it takes a tenth off the compile.
build() { local module=$1; shift; (cd "$here/$module" && go build -trimpath -gcflags=all=-dwarf=false "$@"); }

if [ "$set_name" = control-plane ]; then
  step "building the Kubernetes $version control plane into $bin (once per pinned version; cold: about 6 min on 2 cores)"
  build k8s -ldflags "-s -w$stamp" -o "$staging/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  step "building etcd"
  build k8s -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3
  step "building kwok"
  build kwok -ldflags "-s -w" -o "$staging/kwok" sigs.k8s.io/kwok/cmd/kwok

  # kwok ships its stage definitions and CRDs as YAML inside its module; the harness applies them from here.
  kwok_dir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  mkdir -p "$staging/kwok-stages" "$staging/kwok-crds"
  cp "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml \
    "$kwok_dir"/kustomize/stage/pod/fast/pod-*.yaml "$staging/kwok-stages/"
  cp "$kwok_dir"/kustomize/crd/bases/*.yaml "$staging/kwok-crds/"
else
  step "building the real node's kubelet and kube-proxy $version into $bin (once per pinned version; cold: about 3 min after the control plane)"
  build k8s -ldflags "-s -w$stamp" -o "$staging/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
  step "building containerd and ctr"
  build node/runtime -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w" -o "$staging/" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
  step "building runc (cgo, with seccomp)"
  CGO_ENABLED=1 build node/runc -tags seccomp -ldflags "-s -w" -o "$staging/runc" github.com/opencontainers/runc
  step "building CoreDNS"
  build node/coredns -ldflags "-s -w" -o "$staging/coredns" .
  step "building local-path-provisioner"
  build node/storage -ldflags "-s -w" -o "$staging/local-path-provisioner" github.com/rancher/local-path-provisioner
  step "building versitygw"
  build node/objectstore -ldflags "-s -w" -o "$staging/versitygw" github.com/versity/versitygw/cmd/versitygw
  # The sandbox's pause program ships as C source in the kubernetes module; a static build needs no image base.
  step "building pause"
  k8s_dir=$(cd "$here/k8s" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
  gcc -Os -static -DVERSION="$version" -o "$staging/pause" "$k8s_dir/build/pause/linux/pause.c"
fi
chmod -R u+w "$staging"

mkdir -p "$(dirname "$bin")"
rm -rf "$bin"
mv "$staging" "$bin"
# Builds for earlier pins are dead weight (hundreds of MB each).
find "$(dirname "$(dirname "$bin")")" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
step "built"
echo "$bin"
