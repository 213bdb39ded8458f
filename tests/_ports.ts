// The operator's default ports, checked before a test runs a documented command as written.
// Such a command passes no port flag, so another operator (or anything else) listening on one
// of these ports would make it fail minutes later with "address already in use"; this check
// fails at once and names the process. Run those tests under `flock /tmp/kubeno-ports.lock`.

/** Metrics (`:8443`, or `:8080` when not secure), health probes (`:8081`), webhooks (`9443`). */
export const DEFAULT_PORTS: readonly number[] = [8080, 8081, 8443, 9443];

/** Who listens on a TCP port: `pid 123 (deno run -A examples/myapp.ts)`, as far as ss tells. */
async function holderOf(port: number): Promise<string> {
  try {
    const out = await new Deno.Command("ss", {
      args: ["-Hltnp", `sport = :${port}`],
      stdout: "piped",
      stderr: "null",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    const pid = text.match(/pid=(\d+)/)?.[1];
    if (pid === undefined) return "a process this user cannot see (try: sudo ss -ltnp)";
    let command = "";
    try {
      command = (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0").join(" ").trim();
    } catch { /* gone meanwhile */ }
    return `pid ${pid}${command ? ` (${command})` : ""}`;
  } catch {
    return "a process ss cannot name (ss is not installed)";
  }
}

/** Whether something listens on `port`, on any address. */
function inUse(port: number): boolean {
  for (const hostname of ["0.0.0.0", "127.0.0.1"]) {
    try {
      Deno.listen({ hostname, port }).close();
    } catch (e) {
      if (e instanceof Deno.errors.AddrInUse) return true;
      throw e;
    }
  }
  return false;
}

/**
 * Fails at once when one of the operator's default ports is taken, naming the process that
 * holds it, instead of letting the documented command fail later with "address already in use".
 *
 * @param ports The ports to check.
 * @throws {Error} Naming each busy port and its holder.
 */
export async function assertDefaultPortsFree(ports: readonly number[] = DEFAULT_PORTS) {
  const busy: string[] = [];
  for (const port of ports) {
    if (inUse(port)) busy.push(`port ${port} is held by ${await holderOf(port)}`);
  }
  if (busy.length > 0) {
    throw new Error(
      `The operator's default ports must be free for this test, which runs the documented ` +
        `commands as written: ${busy.join("; ")}. Stop that process and run the test again`,
    );
  }
}
