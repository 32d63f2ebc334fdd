#!/usr/bin/env bash
# What the local cluster's real node (and, for `test`, the tests) need from the machine, installed with apt where that
# is possible: on Linux as root with apt-get. Elsewhere it says in one line what to install and returns, and the local
# cluster runs on simulated nodes only. Installs only what is missing, so a second run does nothing.
#   prerequisites.sh [start|cluster|test] [--dry-run]
#     cluster    the real node: images, pod networking, runc's build, the JDK for the JVM sample (npm run cluster)
#     start      the same, unless $KUBECONFIG names a cluster to run against (npm start)
#     test       that, and what the tests run on the host: a JDK, PostgreSQL's server binaries, git (npm test, CI)
#     --dry-run  say what would be installed, install nothing
set -euo pipefail

purpose=start
dry_run=no
for arg in "$@"; do
  case $arg in
    start|cluster|test) purpose=$arg ;;
    --dry-run) dry_run=yes ;;
    *) echo "usage: prerequisites.sh [start|cluster|test] [--dry-run]" >&2; exit 2 ;;
  esac
done

if [ "$purpose" = start ] && [ -n "${KUBECONFIG:-}" ]; then
  exit 0
fi
go_version=$(go env GOVERSION 2>/dev/null || true)
if [ -z "${KEELSON_CLUSTER_BIN:-}" ] && [ "$(printf '%s\n' go1.26 "${go_version:-go0}" | sort -V | head -1)" != go1.26 ]; then
  echo "prerequisites: Go 1.26 or newer is needed to build the local cluster (https://go.dev/dl/)" >&2
  exit 1
fi

if [ "$(uname -s)" != Linux ]; then
  echo "prerequisites: the real node runs on Linux only; going on with simulated nodes only" >&2
  exit 0
fi

missing=()
# command:Debian package
# The JDK's javac compiles the JVM sample's stand-in image; openssl makes the cluster's certificates, and curl signs
# the object store's first request.
needs=(mmdebstrap:mmdebstrap umoci:umoci ip:iproute2 iptables:iptables nft:nftables gcc:gcc pkg-config:pkg-config
  javac:default-jdk-headless openssl:openssl curl:curl)
if [ "$purpose" = test ]; then
  # A JDK's java and jcmd stand behind the JVM tests; useradd gives fixture processes users of their own; pgBackRest
  # backs up and restores in the member scripts' tests.
  needs+=(git:git java:default-jdk-headless jcmd:default-jdk-headless useradd:passwd pgbackrest:pgbackrest)
fi
for need in "${needs[@]}"; do
  command -v "${need%%:*}" >/dev/null 2>&1 || missing+=("${need#*:}")
done
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
if command -v dpkg >/dev/null 2>&1; then
  dpkg -s libseccomp-dev >/dev/null 2>&1 || missing+=(libseccomp-dev)
else
  missing+=(libseccomp-dev)
fi
# PostgreSQL's server binaries (Debian keeps them in /usr/lib/postgresql/<major>/bin) for the member scripts' tests.
if [ "$purpose" = test ]; then
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
fi
if [ ${#missing[@]} -gt 0 ]; then
  unique=()
  for package in "${missing[@]}"; do
    case " ${unique[*]:-} " in *" $package "*) ;; *) unique+=("$package") ;; esac
  done
  missing=("${unique[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "prerequisites: nothing to install ($purpose)" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "prerequisites: the real node needs ${missing[*]} (Debian's names; as root: apt-get install ${missing[*]});" \
    "going on with simulated nodes only" >&2
  exit 0
fi
if [ "$dry_run" = yes ]; then
  echo "prerequisites: would install ${missing[*]} with apt-get" >&2
  exit 0
fi
echo "prerequisites: installing ${missing[*]} with apt-get" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
