// kubeno's benchmark suite: kubeno against controller-runtime, client-go and
// @kubernetes/client-node, side by side in one run, each contender on a fresh control plane
// with the same kube-apiserver flags. See BENCHMARKS.md for the results and what they mean.
//
//   deno run -A bench/run.ts            full: N = 2,000, 10,000 ConfigMaps, storm of 10,000,
//                                       3 runs each
//   deno run -A bench/run.ts --quick    N = 200, 2,000 ConfigMaps, storm of 2,000, 1 run each
//                                       (minutes)
//   deno run -A bench/run.ts --smoke    tiny N, 1 run, no microbenchmarks (CI smoke test)
//
// Options: --only=converge,converge-lag,informer,latency,storm,footprint,scale,micro  --reps=N
// --out=DIR
// Full runs write bench/results.json and regenerate the table in BENCHMARKS.md (with --only,
// the scenarios run replace theirs in the existing results); quick runs write
// bench/results-quick.json; smoke runs write into a temp folder. Every run prints the table.
// Nothing here asserts timings.
import { parseArgs } from "node:util";
import { KUBERNETES_VERSION } from "../src/testing/assets.ts";
import {
  informerCommand,
  type InformerContender,
  limitCommand,
  type Operator,
  operatorCommand,
  type Peers,
  preparePeers,
  versions,
  warmUpKubeno,
} from "./_peers.ts";
import {
  loadAverage,
  machine,
  medians,
  renderMarkdown,
  type Results,
  updateMarkdown,
} from "./_report.ts";
import {
  IDLE_MS,
  type RunContext,
  runConverge,
  runFootprint,
  runInformer,
  runLatency,
} from "./_scenarios.ts";
import { EDIT_AFTER_MS, EDIT_EVERY_MS, EDITS, runStorm } from "./_storm.ts";
import { NAMESPACE } from "./_bench_resource.ts";
import { bundleSize, compiledSize, microbenchmarks } from "./_micro.ts";
import { SCALE_CONTENDERS, SCALE_SIZES, scaleCharts, type ScaleResults } from "./_scale.ts";

const SCENARIOS = [
  "converge",
  "converge-lag",
  "informer",
  "latency",
  "storm",
  "footprint",
  "scale",
  "micro",
] as const;
type Scenario = typeof SCENARIOS[number];

/**
 * How late converge-lag delivers the operators' Bench and ConfigMap watches, ms: long enough
 * that every echo of an operator's own writes reaches its cache after the reconcile that made
 * them has ended, so a reconcile an echo starts acts on a stale cache.
 */
const WATCH_LAG_MS = 500;

const SIZES = {
  full: {
    n: 2_000,
    m: 10_000,
    latencyObjects: 100,
    rate: 20,
    seconds: 30,
    storm: 10_000,
    footprint: 1_000,
    reps: 3,
  },
  quick: {
    n: 200,
    m: 2_000,
    latencyObjects: 100,
    rate: 20,
    seconds: 10,
    storm: 2_000,
    footprint: 1_000,
    reps: 1,
  },
  smoke: {
    n: 20,
    m: 100,
    latencyObjects: 10,
    rate: 10,
    seconds: 2,
    storm: 50,
    footprint: 20,
    reps: 1,
  },
};

const { values: opts } = parseArgs({
  args: Deno.args,
  options: {
    quick: { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
    only: { type: "string" },
    reps: { type: "string" },
    out: { type: "string" },
  },
});
const mode = opts.smoke ? "smoke" : opts.quick ? "quick" : "full";
const size = { ...SIZES[mode], ...(opts.reps ? { reps: Number(opts.reps) } : {}) };
const only = new Set<Scenario>(
  (opts.only?.split(",") ??
    SCENARIOS.filter((s) => !(mode === "smoke" && s === "micro"))) as Scenario[],
);
for (const s of only) {
  if (!SCENARIOS.includes(s)) {
    console.error(`Cannot run scenario "${s}": choose from ${SCENARIOS.join(", ")}`);
    Deno.exit(2);
  }
}

const BENCH = new URL(".", import.meta.url).pathname;
const outDir = opts.out ??
  (mode === "smoke" ? await Deno.makeTempDir({ prefix: "kubeno-bench-" }) : BENCH);
const log = (line: string) => console.error(`bench: ${line}`);
const tmp = await Deno.makeTempDir({ prefix: "kubeno-bench-run-" });
// The same kube-apiserver flags for every contender (none beyond the test control plane's).
const ctx: RunContext = { apiServerFlags: [], progress: log, tmp };

const loadBefore = loadAverage();
log(`${mode} run; 1-minute load average ${loadBefore}; scenarios: ${[...only].join(", ")}`);
const peers: Peers = await preparePeers(log);
await warmUpKubeno();

const scenarios: Results["scenarios"] = {};

// The kube-rs peer needs cargo; where there is none it is left out, and the report says so.
const operators = ["kubeno", "controller-runtime", ...(peers.kubeOperator ? ["kube-rs"] : [])];

/** Runs every contender `reps` times, interleaved, so machine noise spreads over all. */
async function repeat<R>(
  label: string,
  contenders: string[],
  run: (who: string) => Promise<R>,
  reps = size.reps,
): Promise<Record<string, R[]>> {
  const runs: Record<string, R[]> = Object.fromEntries(contenders.map((c) => [c, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const who of contenders) {
      const t = performance.now();
      const r = await run(who);
      runs[who].push(r);
      log(
        `${label} ${who} #${rep + 1}: ${JSON.stringify(r)} (${
          ((performance.now() - t) / 1000).toFixed(1)
        } s)`,
      );
    }
  }
  return runs;
}

const summarize = <R>(runs: Record<string, R[]>) =>
  Object.fromEntries(
    Object.entries(runs).map(([who, rs]) => [who, medians(rs as Record<string, unknown>[])]),
  );

if (only.has("converge")) {
  const runs = await repeat(
    "converge",
    [...operators, "limit"],
    (who) =>
      runConverge(
        ctx,
        size.n,
        (kc) =>
          who === "limit"
            ? limitCommand(peers, kc, NAMESPACE)
            : operatorCommand(who as "kubeno" | "controller-runtime" | "kube-rs", peers, kc),
        who,
      ),
  );
  scenarios.converge = { n: size.n, runs, median: summarize(runs) };
}

if (only.has("converge-lag")) {
  const runs = await repeat(
    "converge-lag",
    ["kubeno", "controller-runtime"],
    (who) =>
      runConverge(
        ctx,
        size.n,
        (kc) => operatorCommand(who as "kubeno" | "controller-runtime", peers, kc),
        who,
        { watchLagMs: WATCH_LAG_MS },
      ),
  );
  scenarios["converge-lag"] = {
    n: size.n,
    watchLagMs: WATCH_LAG_MS,
    runs,
    median: summarize(runs),
  };
}

if (only.has("informer")) {
  const runs = await repeat(
    "informer",
    [
      "kubeno",
      "kubeno-metadata",
      "client-go",
      "client-go-json",
      "client-go-json-list",
      "client-node",
    ],
    (who) =>
      runInformer(
        ctx,
        size.m,
        (kc, ns) => informerCommand(who as InformerContender, peers, kc, ns),
        who,
      ),
  );
  scenarios.informer = { m: size.m, runs, median: summarize(runs) };
}

if (only.has("latency")) {
  const o = { objects: size.latencyObjects, rate: size.rate, seconds: size.seconds };
  const runs = await repeat("latency", ["kubeno", "controller-runtime"], (who) =>
    runLatency(
      ctx,
      o,
      (kc, starts) => operatorCommand(who as "kubeno" | "controller-runtime", peers, kc, starts),
      who,
    ));
  scenarios.latency = { ...o, runs, median: summarize(runs) };
}

if (only.has("storm")) {
  // kubeno with the manager's default queue (the priority queue), kubeno first-in-first-out,
  // and controller-runtime with its default (in v0.25.2 that is its priority queue).
  const runs = await repeat(
    "storm",
    ["kubeno", "kubeno-fifo", "controller-runtime"],
    (who) =>
      runStorm(
        ctx,
        size.storm,
        (kc, starts) => operatorCommand(who as Operator, peers, kc, starts),
        who,
      ),
  );
  scenarios.storm = {
    n: size.storm,
    edits: EDITS,
    editEveryMs: EDIT_EVERY_MS,
    editAfterMs: EDIT_AFTER_MS,
    runs,
    median: summarize(runs),
  };
}

if (only.has("footprint")) {
  const runs = await repeat("footprint", operators, (who) =>
    runFootprint(
      ctx,
      size.footprint,
      (kc) => operatorCommand(who as "kubeno" | "controller-runtime" | "kube-rs", peers, kc),
      who,
      // Smoke runs only check that the scenario works.
      mode === "smoke" ? 2_000 : IDLE_MS,
    ));
  scenarios.footprint = {
    objects: size.footprint,
    runs,
    median: summarize(runs),
    compile: await compiledSize(`${BENCH}kubeno_converge.ts`, tmp),
    bundle: await bundleSize(`${BENCH}../examples/myapp.ts`, tmp),
  };
}

if (only.has("scale")) {
  // Points the main scenarios measured in this run are taken from them, not run again.
  const points = SCALE_SIZES[mode];
  const scale: ScaleResults = { informer: {}, converge: {} };
  for (const { m, reps } of points.informer) {
    if (scenarios.informer?.m === m) {
      scale.informer![m] = pick(scenarios.informer.median, SCALE_CONTENDERS.informer);
      continue;
    }
    const runs = await repeat(
      `scale informer m=${m}`,
      [...SCALE_CONTENDERS.informer],
      (who) =>
        runInformer(
          ctx,
          m,
          (kc, ns) => informerCommand(who as InformerContender, peers, kc, ns),
          who,
        ),
      reps,
    );
    scale.informer![m] = summarize(runs);
  }
  const convergers = SCALE_CONTENDERS.converge.filter((c) => c !== "kube-rs" || peers.kubeOperator);
  for (const { n, reps } of points.converge) {
    if (scenarios.converge?.n === n) {
      scale.converge![n] = pick(scenarios.converge.median, convergers);
      continue;
    }
    const runs = await repeat(`scale converge n=${n}`, [...convergers], (who) =>
      runConverge(
        ctx,
        n,
        (kc) =>
          who === "limit"
            ? limitCommand(peers, kc, NAMESPACE)
            : operatorCommand(who as "kubeno" | "controller-runtime" | "kube-rs", peers, kc),
        who,
      ), reps);
    scale.converge![n] = summarize(runs);
  }
  scenarios.scale = {
    ...scale,
    reps: { informer: points.informer, converge: points.converge },
  };
}

/** The medians of the named contenders only. */
function pick<T>(medians: Record<string, T>, names: readonly string[]): Record<string, T> {
  return Object.fromEntries(names.filter((n) => medians[n]).map((n) => [n, medians[n]]));
}

if (only.has("micro")) {
  log("microbenchmarks (deno bench)");
  scenarios.micro = await microbenchmarks([
    `${BENCH}workqueue_bench.ts`,
    `${BENCH}store_bench.ts`,
    `${BENCH}watch_decode_bench.ts`,
    `${BENCH}cache_immutability_bench.ts`,
  ]);
}

const command = `deno task bench${mode === "full" ? "" : ` --${mode}`}` +
  (opts.only ? ` --only=${opts.only}` : "") + (opts.reps ? ` --reps=${opts.reps}` : "");
const now = new Date().toISOString();
const loadAfter = loadAverage();
for (const v of Object.values(scenarios)) {
  if (v && typeof v === "object" && !Array.isArray(v)) {
    Object.assign(v, { measuredAt: now, command, load: [loadBefore, loadAfter] });
  }
}
const resultsPath = `${outDir}/${mode === "full" ? "results.json" : `results-${mode}.json`}`;
// With --only, the scenarios run replace theirs in an existing results file of the same
// mode; the others are kept as measured before.
const previous: Results | undefined = opts.only
  ? await Deno.readTextFile(resultsPath).then(JSON.parse).catch(() => undefined)
  : undefined;
const results: Results = {
  generatedAt: now,
  command: previous ? `${previous.command}; ${command}` : command,
  mode,
  machine: {
    ...machine(),
    loadBefore: previous ? `${previous.machine.loadBefore}, ${loadBefore}` : loadBefore,
    loadAfter: previous ? `${previous.machine.loadAfter}, ${loadAfter}` : loadAfter,
  },
  versions: { ...await versions(), kubernetes: KUBERNETES_VERSION },
  params: { ...size },
  scenarios: { ...previous?.scenarios, ...scenarios },
};
const table = renderMarkdown(results);
await Deno.writeTextFile(resultsPath, JSON.stringify(results, null, 2) + "\n");
const writeMd = mode === "full" && !opts.out;
if (writeMd) {
  // The scale charts, next to results.json, linked from BENCHMARKS.md.
  if (results.scenarios.scale) {
    for (const [file, svg] of Object.entries(scaleCharts(results.scenarios.scale))) {
      if (svg) await Deno.writeTextFile(`${BENCH}${file}`, svg);
    }
  }
  await updateMarkdown(`${BENCH}../BENCHMARKS.md`, table);
}
await Deno.remove(tmp, { recursive: true }).catch(() => {});
console.log(table);
log(`wrote ${resultsPath}${writeMd ? " and BENCHMARKS.md" : ""}`);
