// The fixture operator (tests/fixtures/bench_operator.ts: the converge workload as an operator
// program, so `run`'s heap sizing is what runs) inside a memory cgroup of its own, watched
// until every Bench of its namespace has converged. Shared by tests/memory_limit_test.ts (the
// sized run to the end, the unsized one only until it has shown the point) and
// bench/memory_limit_bench.ts (both to the end: the unsized margin).
import { createClient } from "../src/client/client.ts";
import { freePort } from "../src/testing/process.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { Bench } from "./_bench_resource.ts";

const MIB = 2 ** 20;
const FIXTURE = new URL("../tests/fixtures/bench_operator.ts", import.meta.url).pathname;

/** A memory cgroup with a limit, v1 or v2, removed on disposal. */
export class MemoryCgroup {
  readonly dir: string;
  readonly v2: boolean;

  /**
   * Creates the cgroup and sets its limit (and no swap).
   *
   * @param limitBytes The limit.
   * @throws {Error} When there is no writable cgroup memory controller.
   */
  constructor(limitBytes: number) {
    const name = `kubeno-memtest-${crypto.randomUUID().slice(0, 8)}`;
    const v1 = "/sys/fs/cgroup/memory";
    this.v2 = !exists(`${v1}/memory.limit_in_bytes`);
    this.dir = this.v2 ? `${cgroup2Root()}/${name}` : `${v1}/${name}`;
    try {
      Deno.mkdirSync(this.dir);
      if (this.v2) {
        Deno.writeTextFileSync(`${this.dir}/memory.max`, String(limitBytes));
        if (exists(`${this.dir}/memory.swap.max`)) {
          Deno.writeTextFileSync(`${this.dir}/memory.swap.max`, "0");
        }
      } else {
        Deno.writeTextFileSync(`${this.dir}/memory.limit_in_bytes`, String(limitBytes));
        // No swap either, so the limit is the limit (this machine has none; CI may).
        if (exists(`${this.dir}/memory.memsw.limit_in_bytes`)) {
          Deno.writeTextFileSync(`${this.dir}/memory.memsw.limit_in_bytes`, String(limitBytes));
        }
      }
    } catch (err) {
      throw new Error(
        `Cannot create the memory cgroup "${this.dir}" this test needs (run as root with a ` +
          `writable cgroup memory controller; see "mount | grep cgroup"): ${
            (err as Error).message
          }`,
      );
    }
  }

  /** The file a process writes its pid to, to enter. */
  get procs(): string {
    return `${this.dir}/cgroup.procs`;
  }

  /** Peak usage in bytes (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`). */
  peakBytes(): number {
    return Number(read(`${this.dir}/${this.v2 ? "memory.peak" : "memory.max_usage_in_bytes"}`));
  }

  /** OOM kills in this cgroup so far. */
  oomKills(): number {
    const text = read(`${this.dir}/${this.v2 ? "memory.events" : "memory.oom_control"}`);
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  /** Anonymous (not reclaimable) memory charged now: v1 `total_rss`, v2 `anon`. */
  anonBytes(): number {
    const stat = read(`${this.dir}/memory.stat`);
    return Number(
      new RegExp(`^${this.v2 ? "anon" : "total_rss"} (\\d+)$`, "m").exec(stat)?.[1] ?? 0,
    );
  }

  /** How often usage hit the limit (v1 `memory.failcnt`, v2 `max` events). */
  limitHits(): number {
    if (this.v2) return Number(/^max (\d+)$/m.exec(read(`${this.dir}/memory.events`))?.[1] ?? 0);
    return Number(read(`${this.dir}/memory.failcnt`));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    // A killed process leaves the cgroup a moment after its exit is reported.
    for (let i = 0; i < 200; i++) {
      try {
        Deno.removeSync(this.dir);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    Deno.removeSync(this.dir);
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function read(path: string): string {
  return Deno.readTextFileSync(path).trim();
}

function cgroup2Root(): string {
  return exists("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
}

/** What one operator run under the limit did. */
export interface LimitedRun {
  converged: number;
  owned: number;
  oomKills: number;
  limitHits: number;
  peakMiB: number;
  heapLimitMiB: number;
  heapUsedMaxMiB: number;
  heapUsedEndMiB: number;
  heapTotalMaxMiB: number;
  rssMaxMiB: number;
  anonMaxMiB: number;
  /** Stopped (SIGTERM) because its anonymous memory passed `stopAboveAnonMiB`. */
  stoppedEarly: boolean;
  status: Deno.CommandStatus;
  seconds: number;
}

/** How one run under the limit is set up. */
export interface LimitedRunOptions {
  /** The cgroup's limit, bytes. */
  limitBytes: number;
  /** How many Benches the namespace holds (the run ends when all have converged). */
  count: number;
  /** The operator's extra flags (e.g. `--memory-limit=none`). */
  extraArgs?: string[];
  /**
   * Stop the operator (SIGTERM) as soon as the cgroup's anonymous memory exceeds this, MiB:
   * the point is shown, the rest of the converge would add nothing. Default: run to the end.
   */
  stopAboveAnonMiB?: number;
}

/**
 * Runs the fixture operator inside a fresh cgroup limited to `limitBytes`, watching
 * `namespace`, until every Bench there has converged, the operator exits, or its anonymous
 * memory passes `stopAboveAnonMiB`.
 *
 * @param kubeconfig The admin kubeconfig.
 * @param namespace The namespace the operator watches (its Benches already created).
 * @param options The limit, the count and the flags.
 * @returns What the run did, also printed as one line.
 */
export async function runUnderLimit(
  kubeconfig: string,
  namespace: string,
  options: LimitedRunOptions,
): Promise<LimitedRun> {
  const { limitBytes, count, extraArgs = [], stopAboveAnonMiB } = options;
  await using cg = new MemoryCgroup(limitBytes);
  using client = await createClient({ kubeconfig });
  const port = freePort();
  const env = Deno.env.toObject();
  delete env.DENO_V8_FLAGS;
  delete env.KUBENO_HEAP_SIZED;
  const deno = Deno.execPath();
  const argv = [
    deno,
    "run",
    "-A",
    FIXTURE,
    "run",
    "--kubeconfig",
    kubeconfig,
    "--watch-namespace",
    namespace,
    "--metrics-bind-address",
    `127.0.0.1:${port}`,
    "--metrics-secure=false",
    "--health-probe-bind-address=0",
    "--log-level=warning",
    ...extraArgs,
  ];
  // The shell enters the cgroup and then becomes the operator: it is inside before it allocates.
  const child = new Deno.Command("sh", {
    args: ["-c", `echo $$ > "$0" && exec "$@"`, cg.procs, ...argv],
    env,
    clearEnv: true,
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const started = performance.now();
  let exited: Deno.CommandStatus | undefined;
  const status = child.status.then((s) => (exited = s));
  const heap = { limit: 0, used: 0, usedNow: 0, total: 0, rss: 0, anon: 0 };
  const { promise: over, resolve: passedThreshold } = Promise.withResolvers<void>();
  let stoppedEarly = false;
  // The cgroup's anonymous memory, sampled often (a file read): the peak both runs compare.
  const sampleAnon = () => {
    try {
      heap.anon = Math.max(heap.anon, cg.anonBytes());
    } catch { /* the cgroup is being removed */ }
    if (stopAboveAnonMiB !== undefined && heap.anon / MIB > stopAboveAnonMiB) {
      stoppedEarly = true;
      passedThreshold();
    }
  };
  const scrape = async () => {
    sampleAnon();
    try {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
      heap.limit = metric("nodejs_heap_size_limit_bytes") || heap.limit;
      heap.usedNow = metric("nodejs_heap_size_used_bytes") || heap.usedNow;
      heap.used = Math.max(heap.used, heap.usedNow);
      heap.total = Math.max(heap.total, metric("nodejs_heap_size_total_bytes") || 0);
      heap.rss = Math.max(heap.rss, metric("process_resident_memory_bytes") || 0);
    } catch { /* not listening yet, or gone */ }
  };
  const scraper = setInterval(scrape, 250);
  const anonSampler = setInterval(sampleAnon, 50);
  // Watched, not listed: a list of 10,000 objects a second would load the API server more
  // than the operator does.
  const current = new Set<string>();
  const ownedSet = new Set<string>();
  const benches = informer(Bench, { client, namespace });
  const cms = informer(ConfigMap, { client, namespace });
  const { promise: done, resolve: allDone } = Promise.withResolvers<void>();
  const check = () => void (current.size === count && ownedSet.size === count && allDone());
  benches.onEvent(({ type, object: b }) => {
    if (type === "deleted") return;
    const ok = b.status?.observedGeneration === b.metadata.generation &&
      !!b.metadata.finalizers?.length;
    if (ok) current.add(b.metadata.name!);
    else current.delete(b.metadata.name!);
    check();
  });
  cms.onEvent(({ type, object: cm }) => {
    if (type !== "deleted" && cm.metadata.ownerReferences?.some((o) => o.controller)) {
      ownedSet.add(cm.metadata.name!);
      check();
    }
  });
  benches.start();
  cms.start();
  try {
    await Promise.race([done, status, over]);
    clearInterval(anonSampler);
    await scrape();
  } finally {
    clearInterval(scraper);
    clearInterval(anonSampler);
    await Promise.all([benches.stop(), cms.stop()]);
    if (!exited) child.kill("SIGTERM");
    await status;
  }
  const run: LimitedRun = {
    converged: current.size,
    owned: ownedSet.size,
    oomKills: cg.oomKills(),
    limitHits: cg.limitHits(),
    peakMiB: cg.peakBytes() / MIB,
    heapLimitMiB: heap.limit / MIB,
    heapUsedMaxMiB: heap.used / MIB,
    heapUsedEndMiB: heap.usedNow / MIB,
    heapTotalMaxMiB: heap.total / MIB,
    rssMaxMiB: heap.rss / MIB,
    anonMaxMiB: heap.anon / MIB,
    stoppedEarly,
    status: exited!,
    seconds: (performance.now() - started) / 1_000,
  };
  const f = (n: number) => n.toFixed(1);
  console.log(
    `${extraArgs.join(" ") || "sized"}: ${
      stoppedEarly
        ? `stopped at anonymous ${f(run.anonMaxMiB)} > ${f(stopAboveAnonMiB!)} MiB, `
        : ""
    }converged ${run.converged}/${count}, owned ${run.owned}, ` +
      `exit ${run.status.code}${run.status.signal ? ` (${run.status.signal})` : ""}, ` +
      `oom kills ${run.oomKills}, limit hits ${run.limitHits}, cgroup peak ${f(run.peakMiB)} MiB ` +
      `of ${f(limitBytes / MIB)}, anonymous max ${f(run.anonMaxMiB)} MiB, RSS max ` +
      `${f(run.rssMaxMiB)} MiB, heap used max ` +
      `${f(run.heapUsedMaxMiB)} MiB (at the end ${f(run.heapUsedEndMiB)}), heap total max ${
        f(run.heapTotalMaxMiB)
      } MiB, heap limit ` +
      `${f(run.heapLimitMiB)} MiB, ${f(run.seconds)} s`,
  );
  return run;
}
