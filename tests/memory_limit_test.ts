// The operator under a real memory limit: the generated Deployment's (256Mi), enforced by a
// cgroup this test creates (the machine is root), while 10,000 Bench objects converge — each a
// finalizer, an owned ConfigMap and a status write, the benchmark's converge workload. With
// `run`'s heap sizing the operator must not be OOM-killed and must converge every object;
// with it turned off (`--memory-limit=none`), the same workload in a second namespace shows
// the kill, or how close it came (reported). Peak memory (the cgroup's high-water mark) and
// the heap (scraped from /metrics) are printed for both.
//
// No cgroup memory controller to write to (not root, a read-only /sys/fs/cgroup) fails the
// test with the reason: it does not skip.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { createMany, installWorkload } from "../bench/_workload.ts";
import { Bench } from "../bench/_bench_resource.ts";
import { DEFAULT_MEMORY_LIMIT } from "../src/deploy/manifests.ts";
import { heapBudget, parseMemoryQuantity } from "../src/util/memory_limit.ts";
import { uniqueName, waitFor } from "./_helpers.ts";
import { informer } from "../src/runtime/cache/informer.ts";

const COUNT = 10_000;
const LIMIT = parseMemoryQuantity(DEFAULT_MEMORY_LIMIT)!;
const MIB = 2 ** 20;
const FIXTURE = new URL("./fixtures/bench_operator.ts", import.meta.url).pathname;

/** A memory cgroup with a limit, v1 or v2, removed on disposal. */
class MemoryCgroup {
  readonly dir: string;
  readonly v2: boolean;

  constructor(limitBytes: number) {
    const name = uniqueName("kubeno-memtest");
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

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** What one operator run under the limit did. */
interface LimitedRun {
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
  status: Deno.CommandStatus;
  seconds: number;
}

/**
 * Runs the fixture operator inside a fresh cgroup limited to LIMIT, watching `namespace`,
 * until every Bench there has converged or the operator exits.
 */
async function runUnderLimit(
  kubeconfig: string,
  namespace: string,
  extraArgs: string[],
): Promise<LimitedRun> {
  await using cg = new MemoryCgroup(LIMIT);
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
  const scrape = async () => {
    heap.anon = Math.max(heap.anon, cg.anonBytes());
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
  // Watched, not listed: a list of 10,000 objects a second would load the API server more
  // than the operator does.
  const current = new Set<string>();
  const ownedSet = new Set<string>();
  const benches = informer(Bench, { client, namespace });
  const cms = informer(ConfigMap, { client, namespace });
  const { promise: done, resolve: allDone } = Promise.withResolvers<void>();
  const check = () => void (current.size === COUNT && ownedSet.size === COUNT && allDone());
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
    await Promise.race([done, status]);
    await scrape();
  } finally {
    clearInterval(scraper);
    await Promise.all([benches.stop(), cms.stop()]);
    if (!exited) child.kill("SIGTERM");
    await status;
  }
  const converged = current.size;
  const owned = ownedSet.size;
  const run: LimitedRun = {
    converged,
    owned,
    oomKills: cg.oomKills(),
    limitHits: cg.limitHits(),
    peakMiB: cg.peakBytes() / MIB,
    heapLimitMiB: heap.limit / MIB,
    heapUsedMaxMiB: heap.used / MIB,
    heapUsedEndMiB: heap.usedNow / MIB,
    heapTotalMaxMiB: heap.total / MIB,
    rssMaxMiB: heap.rss / MIB,
    anonMaxMiB: heap.anon / MIB,
    status: exited!,
    seconds: (performance.now() - started) / 1_000,
  };
  const f = (n: number) => n.toFixed(1);
  console.log(
    `${extraArgs.join(" ") || "sized"}: converged ${run.converged}/${COUNT}, owned ${run.owned}, ` +
      `exit ${run.status.code}${run.status.signal ? ` (${run.status.signal})` : ""}, ` +
      `oom kills ${run.oomKills}, limit hits ${run.limitHits}, cgroup peak ${f(run.peakMiB)} MiB ` +
      `of ${f(LIMIT / MIB)}, anonymous max ${f(run.anonMaxMiB)} MiB, RSS max ` +
      `${f(run.rssMaxMiB)} MiB, heap used max ` +
      `${f(run.heapUsedMaxMiB)} MiB (at the end ${f(run.heapUsedEndMiB)}), heap total max ${
        f(run.heapTotalMaxMiB)
      } MiB, heap limit ` +
      `${f(run.heapLimitMiB)} MiB, ${f(run.seconds)} s`,
  );
  return run;
}

Deno.test(`${COUNT} Benches converge under the generated Deployment's ${DEFAULT_MEMORY_LIMIT} limit`, async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  await installWorkload(admin);
  await t.step("run restarts itself in place, once, with the heap budget", async () => {
    const port = freePort();
    const env = Deno.env.toObject();
    delete env.DENO_V8_FLAGS;
    delete env.KUBENO_HEAP_SIZED;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        FIXTURE,
        "run",
        "--kubeconfig",
        cp.kubeconfigPath,
        "--memory-limit=256Mi",
        "--metrics-bind-address",
        `127.0.0.1:${port}`,
        "--metrics-secure=false",
        "--health-probe-bind-address=0",
      ],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ]);
    try {
      const limit = await waitFor(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const used = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1]);
        if (used) console.log(`idle (no objects): heap used ${(used / MIB).toFixed(1)} MiB`);
        return Number(/^nodejs_heap_size_limit_bytes (\S+)$/m.exec(text)?.[1]);
      }, { what: "/metrics with the heap limit" });
      assert.equal(limit, heapBudget(LIMIT).heapLimitBytes, "the heap limit is the budget");
      // The same pid now runs with the marker: execve, not a child process.
      const environ = await Deno.readTextFile(`/proc/${child.pid}/environ`);
      assert.ok(environ.split("\0").includes("KUBENO_HEAP_SIZED=1"), "restarted in place");
    } finally {
      child.kill("SIGTERM");
    }
    const status = await child.status;
    const [stdout, stderr] = await output;
    assert.equal(status.code, 0, `exit after SIGTERM: ${stdout}${stderr}`);
    assert.match(
      stdout + stderr,
      /Restarted with a V8 heap limit of 156 MiB for the memory limit 256 MiB \(--memory-limit\)/,
    );
  });

  const sized = uniqueName("mem-sized");
  const unsized = uniqueName("mem-unsized");
  const t0 = performance.now();
  for (const ns of [sized, unsized]) {
    await admin.create(Namespace, { metadata: { name: ns } });
    await createMany(admin, Bench, COUNT, (i) => ({
      metadata: { name: `b-${String(i).padStart(5, "0")}`, namespace: ns },
      spec: { value: `v-${i}` },
    }), 64);
  }
  console.log(`created ${2 * COUNT} Benches in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // One after the other: each run has the machine to itself (side by side, CPU starvation
  // slows the burst and flatters the unsized run's peak: 181 against 250 MiB measured).
  let withSizing: LimitedRun | undefined;

  await t.step(
    "with the heap sized to the limit: no OOM kill, every object converged",
    async () => {
      const run = withSizing = await runUnderLimit(cp.kubeconfigPath, sized, []);
      assert(run.oomKills === 0, `The operator was OOM-killed ${run.oomKills} time(s)`);
      assert(
        run.status.signal === "SIGTERM" || run.status.code === 0 || run.status.signal === null,
        `The operator exited with ${JSON.stringify(run.status)}`,
      );
      assert(
        run.converged === COUNT && run.owned === COUNT,
        `Converged ${run.converged} of ${COUNT} (owned ConfigMaps ${run.owned})`,
      );
      const budget = heapBudget(LIMIT).heapLimitBytes / MIB;
      assert(
        run.heapLimitMiB > 0 && run.heapLimitMiB <= budget + 4,
        `The heap limit is ${run.heapLimitMiB} MiB, not the budget ${budget} MiB`,
      );
    },
  );

  await t.step("without sizing (--memory-limit=none): the kill, or the margin", async () => {
    const run = await runUnderLimit(cp.kubeconfigPath, unsized, ["--memory-limit=none"]);
    assert(
      run.heapLimitMiB === 0 || run.heapLimitMiB > 1024,
      `Sizing was not off: heap limit ${run.heapLimitMiB} MiB`,
    );
    // What the sizing buys, as memory charged to each cgroup (same workload, same time).
    assert(withSizing, "the sized run ran");
    assert(
      run.oomKills > 0 || run.anonMaxMiB > withSizing.anonMaxMiB,
      `Without sizing the operator used no more memory (${run.anonMaxMiB.toFixed(1)} MiB) ` +
        `than with it (${withSizing.anonMaxMiB.toFixed(1)} MiB)`,
    );
    if (run.oomKills > 0) {
      console.log(`unsized: OOM-killed after converging ${run.converged} of ${COUNT}`);
    } else {
      console.log(
        `unsized: not killed; margin ${(LIMIT / MIB - run.peakMiB).toFixed(1)} MiB (cgroup ` +
          `peak), ${(LIMIT / MIB - run.rssMaxMiB).toFixed(1)} MiB (RSS) below the limit, ` +
          `${run.limitHits} hits of the limit (reclaim)`,
      );
    }
  });
});
