// Supervised child processes for the test control plane.
//
// Every binary runs under a tiny `sh` guard whose stdin is a pipe from this Deno process.
// When that pipe closes — because stop() closed it, or because Deno exited for any reason,
// SIGINT and SIGKILL included — the guard sends SIGTERM to the binary, then SIGKILL after a
// grace period; kill() first writes "KILL" to the pipe, and the guard sends SIGKILL at once. No signal listeners are installed, so Ctrl-C keeps its default meaning for
// the test runner, and nothing is left behind.
//
// The guards and the reaper ignore SIGINT: a terminal's Ctrl-C reaches the whole process
// group, and a guard killed by it would stop waiting for its binary (so stop() would return
// while the binary still runs) and a reaper killed by it would never remove the folder.

// Background jobs of a non-interactive shell read /dev/null, so the pipe is kept on fd 3.
const GUARD = `
trap '' INT
exec 3<&0
log="$1"; shift
"$@" </dev/null >>"$log" 2>&1 &
pid=$!
( read -r sig <&3 || sig=TERM; [ "$sig" = KILL ] || sig=TERM
  cat <&3 >/dev/null; kill -"$sig" "$pid" 2>/dev/null; i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL "$pid" 2>/dev/null ) &
wait "$pid"
`;

/** A running binary and its log. */
export class Supervised {
  readonly name: string;
  readonly logPath: string;
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly exited: Promise<number>;
  #exitCode: number | undefined;

  constructor(
    name: string,
    bin: string,
    args: string[],
    logPath: string,
    env?: Record<string, string>,
  ) {
    this.name = name;
    this.logPath = logPath;
    this.#child = new Deno.Command("sh", {
      args: ["-c", GUARD, "kubeno-guard", logPath, bin, ...args],
      stdin: "piped",
      stdout: "null",
      stderr: "null",
      env,
    }).spawn();
    this.#stdin = this.#child.stdin.getWriter();
    this.exited = this.#child.status.then((s) => (this.#exitCode = s.code));
  }

  /** The exit code once the process has exited, else undefined. */
  get exitCode(): number | undefined {
    return this.#exitCode;
  }

  /** Stops the binary (SIGTERM, then SIGKILL after 10 s) and waits for it. */
  async stop(): Promise<void> {
    await this.#stdin.close().catch(() => {});
    await this.exited;
  }

  /** Kills the binary at once (SIGKILL), as a crash or the OOM killer would, and waits for it. */
  async kill(): Promise<void> {
    await this.#stdin.write(new TextEncoder().encode("KILL\n")).catch(() => {});
    await this.stop();
  }

  /** The last lines of the process's log, for error messages. */
  async logTail(lines = 15): Promise<string> {
    const text = await Deno.readTextFile(this.logPath).catch(() => "");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  }
}

/**
 * A free TCP port on 127.0.0.1 at the time of the call, for a process to bind later.
 *
 * It is drawn at random from below the kernel's ephemeral range (`ip_local_port_range`), never
 * from it: a port the kernel handed out for `port: 0` is also the kind it hands to outgoing
 * connections, so between this call and the process's bind another connection's local end can
 * take it (seen as kube-scheduler's "bind: address already in use"). One process never gets the
 * same port twice.
 */
import { KubenoError } from "../util/error.ts";
export function freePort(): number {
  const [low, high] = portRange();
  for (let tries = 0; tries < 200; tries++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch {
      continue;
    }
    handedOut.add(port);
    return port;
  }
  throw new ProcessError(`no free port on 127.0.0.1 between ${low} and ${high} after 200 tries`);
}

const handedOut = new Set<number>();

/** Ports below the ephemeral range: [10000, its first port), or [10000, 32768) if unknown. */
function portRange(): [number, number] {
  let first = 32768;
  try {
    const text = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range");
    const n = Number(text.trim().split(/\s+/)[0]);
    if (Number.isInteger(n) && n > 11000) first = n;
  } catch { /* not Linux: the IANA default's start */ }
  return [10000, first];
}

/**
 * Removes `dir` when this Deno process exits for any reason, or when the returned function is
 * called. Uses the same stdin-pipe guard as the processes.
 */
export function reapOnExit(dir: string): () => Promise<void> {
  const child = new Deno.Command("sh", {
    args: ["-c", `trap '' INT; cat >/dev/null; sleep 0.5; rm -rf "$1"`, "kubeno-reaper", dir],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const w = child.stdin.getWriter();
  return async () => {
    await w.close().catch(() => {});
    await child.status;
  };
}

/**
 * A test process could not be set up: no free loopback port was found for it.
 *
 * @example The one-line message
 * ```ts
 * import { ProcessError } from "./process.ts";
 * const err = new ProcessError("Cannot do it");
 * if (err.name !== "ProcessError" || err.message !== "Cannot do it") throw new Error(err.name);
 * ```
 */
export class ProcessError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What failed, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ProcessError";
  }
}
