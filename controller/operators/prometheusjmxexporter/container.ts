// What the operator runs inside a target container, as POSIX sh with tools every JDK image has (grep, cut,
// readlink), and how it reads the answers. A JVM is attachable only by its own user, so the JVMs that count are the
// java processes this exec's user owns. The exporter agent exits the whole JVM when its port is taken, so the port is
// checked first; and a marker written after a load, named by the JVM's pid and start time, tells a JVM that already
// has the agent (say, if the pod annotation was never written) from one that does not.

/** Where the agent and its config go: the container's temporary directory, writable even on read-only images. */
const directory = '"${TMPDIR:-/tmp}/keelson-jmx-exporter"';

/** Lists the JVMs ("jvm <pid> <start time> <port it serves, or ->") and says "port-in-use" if the port is taken. */
export const inspectScript = `dir=${directory}
for d in /proc/[0-9]*; do
  [ -O "$d" ] || continue
  exe=$(readlink "$d/exe" 2>/dev/null) || continue
  case "$exe" in */java) ;; *) continue ;; esac
  stat=$(cat "$d/stat" 2>/dev/null) || continue
  start=$(echo "\${stat##*) }" | cut -d' ' -f20)
  pid=\${d#/proc/}
  echo "jvm $pid $start $(cat "$dir/loaded-$pid-$start" 2>/dev/null || echo -)"
done
hex=$(printf '%04X' "$1")
if grep -qE ":$hex [0-9A-F]+:[0-9A-F]{4} 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null; then echo port-in-use; fi`;

/**
 * Writes the $2 bytes that stdin carries to the file $1 in the directory, atomically (the exporter rereads its
 * config), and prints its path. It reads a length, not to end of input: not every runtime passes on the close of
 * stdin (kwok does not).
 */
export const writeFileScript = `dir=${directory}
mkdir -p "$dir" && head -c "$2" > "$dir/$1.partial" || exit 1
[ "$(wc -c < "$dir/$1.partial")" -eq "$2" ] || { echo "received $(wc -c < "$dir/$1.partial") of $2 bytes of $1" >&2; exit 1; }
mv -f "$dir/$1.partial" "$dir/$1" && echo "$dir/$1"`;

/**
 * Loads the agent jar $3 with options $4 (serving port $5) into JVM $1 (start time $2) with the JDK's own jcmd,
 * then marks the JVM.
 * Exit 3: no jcmd; exit 4: the JVM refused the agent.
 */
export const loadAgentScript = `dir=${directory}
jcmd="$(dirname "$(readlink /proc/$1/exe)")/jcmd"
[ -x "$jcmd" ] || jcmd=$(command -v jcmd) || { echo "no jcmd in the container: attaching needs a JDK, not a JRE" >&2; exit 3; }
out=$("$jcmd" "$1" JVMTI.agent_load "$3" "$4" 2>&1)
case "$out" in *"return code: 0"*) ;; *) echo "$out" >&2; exit 4 ;; esac
echo "$5" > "$dir/loaded-$1-$2"`;

export interface Jvm {
  pid: number;
  startTime: string;
  /** The port of an agent this operator already loaded into it. */
  loadedPort?: number;
}

export interface Inspection {
  jvms: Jvm[];
  portInUse: boolean;
}

export function parseInspection(stdout: string): Inspection {
  const jvms: Jvm[] = [];
  let portInUse = false;
  for (const line of stdout.split('\n')) {
    const [word, pid, startTime, loaded] = line.trim().split(/\s+/);
    if (word === 'port-in-use') portInUse = true;
    if (word !== 'jvm' || !pid || !startTime) continue;
    const loadedPort = Number(loaded);
    jvms.push({ pid: Number(pid), startTime, ...(Number.isInteger(loadedPort) && loadedPort > 0 ? { loadedPort } : {}) });
  }
  return { jvms, portInUse };
}

/** The agent's argument: `[host:]port:config`. */
export function agentOptions(port: number, configPath: string, bindAddress?: string): string {
  return `${bindAddress ? `${bindAddress}:` : ''}${port}:${configPath}`;
}
