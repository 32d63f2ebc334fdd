#!/usr/bin/env bash
# Pins the control plane to one Kubernetes release: rewrites k8s/go.mod so that every staging module that
# k8s.io/kubernetes replaces with a local path comes from the module proxy at the matching v0.Y.Z.
# Then raises the volume provisioner's shared dependencies to the same versions.
# Usage: cluster/pin.sh v1.35.4
set -euo pipefail
version=${1:?usage: pin.sh vMAJOR.MINOR.PATCH}
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local
upstream=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
staging_version="v0.${version#v1.}"
{
  echo "// Wrapper module: builds the upstream control-plane binaries from the Go module proxy."
  echo "// Written by pin.sh; change the release with: cluster/pin.sh vX.Y.Z"
  echo "module keelson.dev/cluster/k8s"
  echo
  grep -m1 '^go ' "$upstream"
  echo
  grep '^godebug' "$upstream" || true
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  awk -v v="$staging_version" '/^replace \(/{f=1;next} f&&/^\)/{f=0} f{print "\t"$1" => "$1" "v}' "$upstream"
  echo ")"
} > "$here/k8s/go.mod"
rm -f "$here/k8s/go.sum"
(cd "$here/k8s" && go mod tidy)

# The volume provisioner is an old module: its dependencies that the control plane uses too are required at the
# control plane's versions, so that it shares their compiled packages (Go's build cache), which takes a minute off a
# cold build. Minimal version selection keeps any higher version another dependency needs; a requirement can bring in
# modules that are shared too, so this repeats until go.mod no longer changes.
k8s_versions=$(cd "$here/k8s" && go list -m all | awk 'NF >= 2 {print $1, $2}')
cd "$here/node/storage"
for round in 1 2 3 4 5 6; do
  before=$(sha256sum go.mod)
  used=$(go list -deps -f '{{with .Module}}{{.Path}}{{end}}' github.com/rancher/local-path-provisioner | sort -u)
  for module in $used; do
    wanted=$(awk -v m="$module" '$1 == m {print $2}' <<<"$k8s_versions")
    [ -z "$wanted" ] || go mod edit -require="$module@$wanted"
  done
  go mod tidy
  [ "$(sha256sum go.mod)" != "$before" ] || break
  if [ "$round" = 6 ]; then
    echo "pin.sh: node/storage's requirements did not settle" >&2
    exit 1
  fi
done
