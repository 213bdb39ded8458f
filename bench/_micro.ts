// Microbenchmarks through `deno bench --json`, and the compiled payload size through
// `deno compile` where this machine can build one.

/** One microbenchmark result. */
export interface MicroResult {
  group: string;
  name: string;
  file: string;
  /** Mean time per iteration, ms. */
  avgMs: number;
  /** Events per iteration (from "(N events|keys per iteration)" in the name) per second. */
  eventsPerSec: number;
}

/**
 * Runs `deno bench --json` over `files` and reads events/s from each benchmark's name.
 *
 * @param files Bench files.
 * @returns One result per benchmark.
 * @throws {Error} When `deno bench` fails.
 */
export async function microbenchmarks(files: string[]): Promise<MicroResult[]> {
  const out = await new Deno.Command("deno", {
    args: ["bench", "-A", "--json", ...files],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`deno bench failed:\n${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  }
  const report = JSON.parse(new TextDecoder().decode(out.stdout));
  return report.benches.flatMap((b: any) => {
    const ok = b.results?.[0]?.ok;
    if (!ok) return [];
    const perIter = Number(b.name.match(/\((\d+) (?:events|keys) per iteration\)/)?.[1] ?? 1);
    const avgNs = ok.avg;
    return [{
      group: b.group ?? "",
      name: b.name,
      file: String(b.origin).split("/").pop(),
      avgMs: avgNs / 1e6,
      eventsPerSec: perIter / (avgNs / 1e9),
    }];
  });
}

/**
 * Compiles `entry` with `deno compile` and reports the binary's size, or why it could not.
 * `deno compile` downloads the `denort` runtime unless `DENORT_BIN` points at one.
 *
 * @param entry The operator's entry file.
 * @param tmp A scratch folder.
 * @returns E.g. "92.1 MiB (denort + 1.2 MiB of modules)" or "not available here: <reason>".
 */
export async function compiledSize(entry: string, tmp: string): Promise<string> {
  const output = `${tmp}/kubeno-operator`;
  const out = await new Deno.Command("deno", {
    args: ["compile", "-A", "--output", output, entry],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(300_000),
  }).output().catch((e) => ({ success: false, stderr: new TextEncoder().encode(String(e)) }));
  if (!out.success) {
    // deno colours its output; keep the first line that says what failed.
    // deno-lint-ignore no-control-regex
    const text = new TextDecoder().decode(out.stderr).replace(/\x1b\[[0-9;]*m/g, "");
    const download = /Download|error sending request/.test(text);
    const cause = text.split("\n").map((l) =>
      l.trim().replace(/^\d+: /, "")
    ).filter((l) => /^(dns error|error|client error)/.test(l)).pop() ?? "deno compile failed";
    const hint = Deno.env.get("DENORT_BIN") ? "" : "; DENORT_BIN is not set";
    return download
      ? `not available here: deno compile downloads the denort runtime and the download failed (${cause}${hint})`
      : `not available here: ${cause}${hint}`;
  }
  const size = (await Deno.stat(output)).size;
  const runtime = Deno.env.get("DENORT_BIN");
  const base = runtime ? (await Deno.stat(runtime)).size : 0;
  const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
  return base
    ? `${mib(size)} MiB (denort ${mib(base)} MiB + ${mib(size - base)} MiB of operator)`
    : `${mib(size)} MiB`;
}

/** What `deno bundle` made of an operator. */
export interface BundleSize {
  /** The bundle's size, bytes. */
  bytes: number;
  /** Whether @kubernetes/client-node ended up in it. */
  clientNode: boolean;
}

/**
 * Bundles `entry` with `deno bundle` (offline: every module is in Deno's cache), the stand-in
 * for what `deno compile` adds to the runtime where denort cannot be downloaded.
 *
 * @param entry The operator's entry file.
 * @param tmp A scratch folder.
 * @returns The bundle's size and whether client-node is inside, or why it could not be built.
 */
export async function bundleSize(entry: string, tmp: string): Promise<BundleSize | string> {
  const output = `${tmp}/operator-bundle.js`;
  const out = await new Deno.Command("deno", {
    args: ["bundle", "--quiet", "--output", output, entry],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(300_000),
  }).output().catch((e) => ({ success: false, stderr: new TextEncoder().encode(String(e)) }));
  if (!out.success) {
    // deno-lint-ignore no-control-regex
    const text = new TextDecoder().decode(out.stderr).replace(/\x1b\[[0-9;]*m/g, "");
    return `not available here: ${text.split("\n").find((l) => /error/i.test(l)) ?? "failed"}`;
  }
  const text = await Deno.readTextFile(output);
  return {
    bytes: new TextEncoder().encode(text).length,
    clientNode: text.includes("@kubernetes/client-node") || text.includes("class KubeConfig"),
  };
}
