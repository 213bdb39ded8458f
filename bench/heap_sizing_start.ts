// What `run`'s heap sizing costs at start: spawn → /readyz passing, for the fixture operator
// of tests/memory_limit_test.ts (the converge operator as an operator program), with
//
// - `none`:    --memory-limit=none (no sizing: V8's default heap);
// - `reexec`:  --memory-limit=256Mi and no DENO_V8_FLAGS: `run` replaces itself once (execve);
// - `preset`:  --memory-limit=256Mi and DENO_V8_FLAGS already the budget, as the generated
//              Deployment sets it: nothing to do.
//
//   flock /tmp/kubeno-bench.lock deno run -A bench/heap_sizing_start.ts [--reps 7]
//
// Prints the median and the runs of each, alternating the variants.
import { parseArgs } from "node:util";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient } from "../src/client/client.ts";
import { installWorkload } from "./_workload.ts";
import { heapBudget, heapFlags } from "../src/util/memory_limit.ts";

const { values: args } = parseArgs({ args: Deno.args, options: { reps: { type: "string" } } });
const reps = Number(args.reps ?? 7);
const FIXTURE = new URL("../tests/fixtures/bench_operator.ts", import.meta.url).pathname;

await using cp = await startControlPlane();
{
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  await installWorkload(admin);
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function startToReady(variant: string): Promise<number> {
  const port = freePort();
  const env = Deno.env.toObject();
  delete env.DENO_V8_FLAGS;
  delete env.KUBENO_HEAP_SIZED;
  if (variant === "preset") env.DENO_V8_FLAGS = heapFlags(heapBudget(256 * 2 ** 20));
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      FIXTURE,
      "run",
      "--kubeconfig",
      cp.kubeconfigPath,
      "--metrics-bind-address=0",
      `--health-probe-bind-address=127.0.0.1:${port}`,
      `--memory-limit=${variant === "none" ? "none" : "256Mi"}`,
    ],
    env,
    clearEnv: true,
    stdout: "null",
    stderr: "null",
  }).spawn();
  let ms: number | undefined;
  while (ms === undefined) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      await r.body?.cancel();
      if (r.status === 200) ms = performance.now() - t0;
    } catch { /* not listening yet */ }
    if (ms === undefined) await new Promise((r) => setTimeout(r, 2));
  }
  child.kill("SIGTERM");
  const s = await child.status;
  if (s.code !== 0) throw new Error(`The operator (${variant}) exited with ${s.code}`);
  return ms;
}

const variants = ["none", "reexec", "preset"];
const runs: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v, []]));
await startToReady("none"); // warm the module cache
for (let i = 0; i < reps; i++) for (const v of variants) runs[v].push(await startToReady(v));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const v of variants) {
  console.log(
    `${v.padEnd(7)} start → ready median ${median(runs[v]).toFixed(0)} ms  (${
      runs[v].map((x) => x.toFixed(0)).join(", ")
    })`,
  );
}
console.log(`re-exec adds ${(median(runs.reexec) - median(runs.none)).toFixed(0)} ms (median)`);
