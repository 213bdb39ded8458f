// The memory limit's margin: the fixture operator of tests/memory_limit_test.ts converging
// --count Benches (default 10,000) inside a cgroup limited to the generated Deployment's
// memory limit (256Mi), once with `run`'s heap sizing and once without (`--memory-limit=none`,
// V8's default heap), each run to the end, one after the other on one control plane, each on
// its own namespace of fresh Benches. Prints each run's cgroup peak, anonymous memory, RSS and
// heap, and the unsized run's margin below the limit (or its OOM kill). The test stops the
// unsized run as soon as it has passed the sized run's peak; this measures the rest.
//
//   flock /tmp/kubeno-bench.lock deno run -A bench/memory_limit_bench.ts [--count 10000]
//
// Root with a writable cgroup memory controller is needed. Nothing here asserts anything.
import { parseArgs } from "node:util";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { DEFAULT_MEMORY_LIMIT } from "../src/deploy/manifests.ts";
import { parseMemoryQuantity } from "../src/util/memory_limit.ts";
import { Bench } from "./_bench_resource.ts";
import { type LimitedRun, runUnderLimit } from "./_memory_limit.ts";
import { createMany, installWorkload } from "./_workload.ts";

const { values: args } = parseArgs({ args: Deno.args, options: { count: { type: "string" } } });
const count = Number(args.count ?? 10_000);
const limitBytes = parseMemoryQuantity(DEFAULT_MEMORY_LIMIT)!;
const MIB = 2 ** 20;

await using cp = await startControlPlane();
using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
await installWorkload(admin);

async function run(name: string, extraArgs: string[]): Promise<LimitedRun> {
  const ns = `mem-${name}`;
  await admin.create(Namespace, { metadata: { name: ns } });
  await createMany(admin, Bench, count, (i) => ({
    metadata: { name: `b-${String(i).padStart(5, "0")}`, namespace: ns },
    spec: { value: `v-${i}` },
  }), 64);
  return await runUnderLimit(cp.kubeconfigPath, ns, { limitBytes, count, extraArgs });
}

const sized = await run("sized", []);
const unsized = await run("unsized", ["--memory-limit=none"]);
const f = (n: number) => n.toFixed(1);
console.log(
  `\nlimit ${f(limitBytes / MIB)} MiB, ${count} Benches; anonymous max: sized ` +
    `${f(sized.anonMaxMiB)}, unsized ${f(unsized.anonMaxMiB)} MiB (×${
      f(unsized.anonMaxMiB / sized.anonMaxMiB)
    }); cgroup peak: sized ${f(sized.peakMiB)}, unsized ${f(unsized.peakMiB)} MiB`,
);
if (unsized.oomKills > 0) {
  console.log(`unsized: OOM-killed after converging ${unsized.converged} of ${count}`);
} else {
  console.log(
    `unsized: not killed; margin ${f(limitBytes / MIB - unsized.peakMiB)} MiB (cgroup peak), ` +
      `${f(limitBytes / MIB - unsized.rssMaxMiB)} MiB (RSS) below the limit, ` +
      `${unsized.limitHits} hits of the limit (reclaim); sized: margin ` +
      `${f(limitBytes / MIB - sized.peakMiB)} MiB (cgroup peak)`,
  );
}
