#!/usr/bin/env bash
# Builds one of the tests' pinned Go tools from the module proxy into a cache keyed by its pins and this recipe,
# shared by every checkout on the machine, and prints the binary's path. Each tool is a folder here: go.mod and
# go.sum pin it, tools.go names its command, and embed-placeholders (optional) lists generated files it lacks.
#   build.sh actionlint
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=${1:?usage: build.sh TOOL}
[ -f "$here/$tool/tools.go" ] || { echo "build.sh: no tool $tool in $here" >&2; exit 2; }
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0

command=$(sed -n 's/^import _ "\(.*\)"$/\1/p' "$here/$tool/tools.go")
key=$( (cat "$here/$tool/go.mod" "$here/$tool/go.sum" "$here/$tool/tools.go" "$here/$tool"/embed-placeholders "$0" \
  2>/dev/null; go version) | sha256sum | cut -c1-16)
binary="${XDG_CACHE_HOME:-$HOME/.cache}/keelson/tools/$tool-$key"
if [ ! -x "$binary" ]; then
  echo "building $command into $binary (once per pinned version)" >&2
  mkdir -p "$(dirname "$binary")"
  cd "$here/$tool"
  modfile=go.mod
  # A module whose release embeds files its repository generates (Alertmanager's web UI) cannot build from the
  # proxy as it is: each line of embed-placeholders, "<module> <dir>", builds that module from a copy where <dir>
  # holds a placeholder page. The module cache is read-only, and go build's -overlay may not reach into it.
  if [ -f embed-placeholders ]; then
    copies=$(mktemp -d)
    trap 'chmod -R u+w "$copies" && rm -rf "$copies"' EXIT
    cp go.mod go.sum "$copies/"
    while read -r module dir; do
      copy="$copies/src/$module"
      mkdir -p "$(dirname "$copy")"
      go mod download "$module"
      cp -r "$(go list -m -f '{{.Dir}}' "$module")" "$copy"
      chmod -R u+w "$copy"
      mkdir -p "$copy/$dir"
      echo '<!doctype html><title>built without its web UI</title>' > "$copy/$dir/index.html"
      echo "replace $module => $copy" >> "$copies/go.mod"
    done < embed-placeholders
    modfile="$copies/go.mod"
  fi
  go build -modfile="$modfile" -trimpath -ldflags "-s -w" -o "$binary.partial.$$" "$command"
  mv "$binary.partial.$$" "$binary"
fi
echo "$binary"
