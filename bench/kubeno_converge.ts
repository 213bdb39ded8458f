// kubeno's converge contender: the benchmark operator written with kubeno, doing what
// bench/peers/go/cr-operator does with controller-runtime. For each Bench: add a finalizer
// (the framework's merge patch), server-side apply one owned ConfigMap (controller
// ownerReference) and patch status.observedGeneration.
//
//   deno run -A bench/kubeno_converge.ts --kubeconfig FILE [--workers 4] [--starts FILE]
//     [--priority-queue false]
//
// Prints "ready" once its caches are synced; runs until SIGTERM; at exit prints one JSON line
// of counters: `reconciles` (what controller_runtime_reconcile_total counts), `ownWriteEchoes`
// (watch events that were its own writes and queued nothing), `cacheWaits` and
// `cacheWaitsExpired` (reconciles that waited for the cache to show its own writes, and waits
// that gave up). With --starts, writes the log of reconcile starts ("R name generation
// epoch-ms": a worker took the key), of the reconcile function's starts once the finalizer is
// on ("U ...") and of Bench update events reaching the informer ("E ...") to FILE at exit. With
// --priority-queue false, the manager's work queues are first-in-first-out (createManager's
// `priorityQueue: false`); without it, the manager's default.
import { createClient } from "../src/client/client.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { Bench, FIELD_MANAGER, FINALIZER } from "./_bench_resource.ts";

// Flags read by hand: node:util's parseArgs would load Node's util module (~4.6 MiB of RSS at
// idle), which kubeno loads only with LogTape, once logging is configured (this contender never
// configures it; an operator program's `run` does).
function flag(name: string, fallback?: string): string | undefined {
  for (let i = 0; i < Deno.args.length; i++) {
    const a = Deno.args[i];
    if (a === `--${name}`) return Deno.args[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return fallback;
}
const args = {
  kubeconfig: flag("kubeconfig"),
  workers: flag("workers", "4")!,
  starts: flag("starts"),
  "priority-queue": flag("priority-queue"),
};
if (Deno.env.get("KUBENO_BENCH_WARMUP")) Deno.exit(0);

// Recorded in memory and written at exit, so logging costs nothing measurable.
const starts: string[] = [];
const record = args.starts !== undefined;

const controller = reconcile(Bench, {
  owns: [ConfigMap],
  finalizer: FINALIZER,
  finalize() {},
  run: { maxConcurrent: Number(args.workers), fieldManager: FIELD_MANAGER },
  async reconcile(bench, ctx) {
    if (record) {
      const ms = (performance.timeOrigin + performance.now()).toFixed(3);
      starts.push(`U ${bench.metadata.name} ${bench.metadata.generation} ${ms}`);
    }
    await ctx.apply(ConfigMap, {
      metadata: { name: bench.metadata.name! },
      data: { value: bench.spec.value },
    });
    await ctx.patchStatus(bench, { observedGeneration: bench.metadata.generation });
  },
});

// The runner's metrics hooks, counted in place of a metrics registry.
const counts = { reconciles: 0, ownWriteEchoes: 0, cacheWaits: 0, cacheWaitsExpired: 0 };
const priorityQueue = args["priority-queue"] === undefined
  ? undefined
  : args["priority-queue"] !== "false";
const client = await createClient({ kubeconfig: args.kubeconfig });
const manager = createManager({
  ...(priorityQueue === undefined ? {} : { priorityQueue }),
  client,
  controllers: [controller],
  metrics: {
    reconcile: () => void counts.reconciles++,
    echo: () => void counts.ownWriteEchoes++,
    cacheLag: (_, outcome) =>
      void (outcome === "deferred" ? counts.cacheWaits++ : counts.cacheWaitsExpired++),
    // A worker took the key: the reconcile starts here (the framework adds the finalizer before
    // it calls the reconcile function), as the Go peer's Reconcile starts when its worker does.
    workqueue: () =>
      record
        ? {
          queueDuration: (_, key) => {
            const ms = (performance.timeOrigin + performance.now()).toFixed(3);
            const bench = manager.informers!.for(Bench).store.get(key);
            starts.push(`R ${bench?.metadata.name} ${bench?.metadata.generation} ${ms}`);
          },
        }
        : undefined,
  },
});
const stop = new AbortController();
Deno.addSignalListener("SIGTERM", () => stop.abort());
const run = manager.start(stop.signal);
if (record) {
  // When the watch event reaches the (shared) informer, to split the latency in two.
  manager.informers!.for(Bench).onEvent(({ type, object: bench }) => {
    if (type !== "modified") return;
    const ms = (performance.timeOrigin + performance.now()).toFixed(3);
    starts.push(`E ${bench.metadata.name} ${bench.metadata.generation} ${ms}`);
  });
}
// "ready" the moment both caches have synced (the Go peer polls every 100 µs for the same);
// they are the controller's own informers, not two more.
const caches = [manager.informers!.for(Bench), manager.informers!.for(ConfigMap)];
Promise.all(caches.map((c) => c.synced({ signal: stop.signal }))).then(() => {
  if (manager.informers!.size !== 2) throw new Error("ready must mean the controller's caches");
  console.log("ready");
}, () => {});
await run;
client.close();
console.log(JSON.stringify(counts));
if (args.starts) await Deno.writeTextFile(args.starts, starts.join("\n") + "\n");
Deno.exit(0);
