// The operator under a real memory limit: the generated Deployment's (256Mi), enforced by a
// cgroup this test creates (the machine is root), while 10,000 Bench objects converge — each a
// finalizer, an owned ConfigMap and a status write, the benchmark's converge workload. With
// `run`'s heap sizing the operator must not be OOM-killed and must converge every object;
// peak memory (the cgroup's high-water mark), RSS and the heap (scraped from /metrics) are
// printed. With the sizing turned off (`--memory-limit=none`), the same workload in a second
// namespace runs only until it shows the point: it is OOM-killed, or its anonymous memory
// passes the sized run's peak over its whole converge (how far it got and its heap limit,
// V8's default, are printed). The unsized run's full margin below the limit is a benchmark:
// `flock /tmp/kubeno-bench.lock deno run -A bench/memory_limit_bench.ts`.
//
// No cgroup memory controller to write to (not root, a read-only /sys/fs/cgroup) fails the
// test with the reason: it does not skip.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { createMany, installWorkload } from "../bench/_workload.ts";
import { Bench } from "../bench/_bench_resource.ts";
import { type LimitedRun, runUnderLimit } from "../bench/_memory_limit.ts";
import { freePort } from "../src/testing/process.ts";
import { DEFAULT_MEMORY_LIMIT } from "../src/deploy/manifests.ts";
import { heapBudget, parseMemoryQuantity } from "../src/util/memory_limit.ts";
import { uniqueName, waitFor } from "./_helpers.ts";

const COUNT = 10_000;
const LIMIT = parseMemoryQuantity(DEFAULT_MEMORY_LIMIT)!;
const MIB = 2 ** 20;
const FIXTURE = new URL("./fixtures/bench_operator.ts", import.meta.url).pathname;

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
      // ...with glibc's mmap threshold fixed, as the generated Deployment sets it.
      assert.ok(
        environ.split("\0").includes("MALLOC_MMAP_THRESHOLD_=1048576"),
        "the native-memory setting carried into the restarted process",
      );
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

  /** Creates `ns` and its COUNT Benches. */
  const createBenches = async (ns: string) => {
    const t0 = performance.now();
    await admin.create(Namespace, { metadata: { name: ns } });
    await createMany(admin, Bench, COUNT, (i) => ({
      metadata: { name: `b-${String(i).padStart(5, "0")}`, namespace: ns },
      spec: { value: `v-${i}` },
    }), 64);
    console.log(
      `created ${COUNT} Benches in ${ns} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  };
  // One after the other: each run has the machine to itself (side by side, CPU starvation
  // slows the burst and flatters the unsized run's peak: 181 against 250 MiB measured).
  let withSizing: LimitedRun | undefined;

  await t.step(
    "with the heap sized to the limit: no OOM kill, every object converged",
    async () => {
      const sized = uniqueName("mem-sized");
      await createBenches(sized);
      const run = withSizing = await runUnderLimit(cp.kubeconfigPath, sized, {
        limitBytes: LIMIT,
        count: COUNT,
      });
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

  await t.step(
    "without sizing (--memory-limit=none): the kill, or more memory than the sized run's peak",
    async () => {
      assert(withSizing, "the sized run ran");
      // The same workload, created only now: the sized run had the API server to itself.
      const unsized = uniqueName("mem-unsized");
      await createBenches(unsized);
      // Stopped as soon as it passes the sized run's whole-converge peak: the rest of the
      // converge only adds to the margin, which bench/memory_limit_bench.ts measures.
      const run = await runUnderLimit(cp.kubeconfigPath, unsized, {
        limitBytes: LIMIT,
        count: COUNT,
        extraArgs: ["--memory-limit=none"],
        stopAboveAnonMiB: withSizing.anonMaxMiB,
      });
      assert(
        run.heapLimitMiB === 0 || run.heapLimitMiB > 1024,
        `Sizing was not off: heap limit ${run.heapLimitMiB} MiB`,
      );
      // What the sizing buys, as memory charged to each cgroup (same workload).
      assert(
        run.oomKills > 0 || run.anonMaxMiB > withSizing.anonMaxMiB,
        `Without sizing the operator used no more memory (${run.anonMaxMiB.toFixed(1)} MiB) ` +
          `than with it (${withSizing.anonMaxMiB.toFixed(1)} MiB)`,
      );
      const budget = heapBudget(LIMIT).heapLimitBytes / MIB;
      if (run.oomKills > 0) {
        console.log(
          `unsized: OOM-killed after converging ${run.converged} of ${COUNT}, heap limit ` +
            `${run.heapLimitMiB.toFixed(1)} MiB (V8's default; sized: ${budget.toFixed(1)})`,
        );
      } else {
        console.log(
          `unsized: anonymous memory ${run.anonMaxMiB.toFixed(1)} MiB passed the sized run's ` +
            `whole-converge peak ${withSizing.anonMaxMiB.toFixed(1)} MiB after converging ` +
            `${run.converged} of ${COUNT} in ${run.seconds.toFixed(1)} s, heap limit ` +
            `${run.heapLimitMiB.toFixed(1)} MiB (V8's default; sized: ${budget.toFixed(1)}, ` +
            `the cgroup's limit ${(LIMIT / MIB).toFixed(1)}); the full margin: ` +
            `bench/memory_limit_bench.ts`,
        );
      }
    },
  );
});
