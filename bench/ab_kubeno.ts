// kubeno against an earlier kubeno, side by side in one run: the converge and event-latency
// scenarios of bench/run.ts, each contender on a fresh control plane, interleaved run by run,
// so that a change's cost is read as a ratio against the code before it rather than against
// numbers measured on another day.
//
//   git worktree add --detach /tmp/kubeno-before <commit>
//   deno run -A bench/ab_kubeno.ts --before /tmp/kubeno-before [--reps 3] [--n 2000]
//
// Prints one JSON line per run and the medians with the ratios now / before.
import { parseArgs } from "node:util";
import { medians } from "./_report.ts";
import { type RunContext, runConverge, runLatency } from "./_scenarios.ts";
import type { Command } from "./_peers.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    before: { type: "string" },
    reps: { type: "string", default: "3" },
    n: { type: "string", default: "2000" },
  },
});
if (!args.before) {
  console.error("ab_kubeno: --before DIR is required (a checkout of the earlier commit)");
  Deno.exit(2);
}
const trees = { before: args.before, now: new URL("..", import.meta.url).pathname };
const command = (who: keyof typeof trees, kubeconfig: string, starts?: string): Command => ({
  cmd: "deno",
  args: [
    "run",
    "-A",
    `${trees[who]}/bench/kubeno_converge.ts`,
    "--kubeconfig",
    kubeconfig,
    "--workers",
    "4",
    ...(starts ? ["--starts", starts] : []),
  ],
});
const tmp = await Deno.makeTempDir({ prefix: "kubeno-ab-" });
const ctx: RunContext = { apiServerFlags: [], progress: (l) => console.error(l), tmp };
// Warm Deno's module cache for both trees, as bench/run.ts does for one.
for (const who of ["before", "now"] as const) {
  const c = command(who, "/dev/null");
  await new Deno.Command(c.cmd, { args: c.args, env: { KUBENO_BENCH_WARMUP: "1" } }).output();
}

const runs: Record<string, Record<string, unknown>[]> = {};
const record = (key: string, r: object) => {
  (runs[key] ??= []).push(r as Record<string, unknown>);
  console.log(JSON.stringify({ [key]: r }));
};
for (let rep = 0; rep < Number(args.reps); rep++) {
  for (const who of ["before", "now"] as const) {
    record(
      `converge ${who}`,
      await runConverge(ctx, Number(args.n), (kc) => command(who, kc), `kubeno-${who}`),
    );
    record(
      `latency ${who}`,
      await runLatency(
        ctx,
        { objects: 100, rate: 20, seconds: 30 },
        (kc, starts) => command(who, kc, starts),
        `kubeno-${who}`,
      ),
    );
  }
}
const m = Object.fromEntries(Object.entries(runs).map(([k, rs]) => [k, medians(rs)]));
console.log(JSON.stringify({ medians: m }));
for (const scenario of ["converge", "latency"]) {
  const before = m[`${scenario} before`] as Record<string, number>;
  const now = m[`${scenario} now`] as Record<string, number>;
  for (const [k, v] of Object.entries(now)) {
    if (typeof v !== "number" || typeof before[k] !== "number") continue;
    console.log(`${scenario} ${k}: before ${before[k].toFixed(2)}, now ${v.toFixed(2)}, ` +
      `now / before ${(v / before[k]).toFixed(3)}×`);
  }
}
await Deno.remove(tmp, { recursive: true });
