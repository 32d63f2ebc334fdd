#!/usr/bin/env bash
# Builds one of the tests' pinned Go tools from the module proxy into a cache keyed by its pins and this recipe,
# shared by every checkout on the machine, and prints the binary's path. Each tool is a folder here: go.mod and
# go.sum pin it, tools.go names its command.
#   build.sh actionlint
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=${1:?usage: build.sh TOOL}
[ -f "$here/$tool/tools.go" ] || { echo "build.sh: no tool $tool in $here" >&2; exit 2; }
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0

command=$(sed -n 's/^import _ "\(.*\)"$/\1/p' "$here/$tool/tools.go")
key=$( (cat "$here/$tool/go.mod" "$here/$tool/go.sum" "$here/$tool/tools.go" "$0"; go version) | sha256sum | cut -c1-16)
binary="${XDG_CACHE_HOME:-$HOME/.cache}/keelson/tools/$tool-$key"
if [ ! -x "$binary" ]; then
  echo "building $command into $binary (once per pinned version)" >&2
  mkdir -p "$(dirname "$binary")"
  (cd "$here/$tool" && go build -trimpath -ldflags "-s -w" -o "$binary.partial.$$" "$command")
  mv "$binary.partial.$$" "$binary"
fi
echo "$binary"
