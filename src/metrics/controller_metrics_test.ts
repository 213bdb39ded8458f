import assert from "node:assert/strict";
import { FakeClock } from "../testing/fake_clock.ts";
import { Registry } from "./registry.ts";
import { workqueueMetrics } from "./controller_metrics.ts";
import { LOW_PRIORITY, WorkQueue } from "../runtime/queue/workqueue.ts";

/** The `workqueue_depth` samples of the scrape, by `priority` label. */
async function depths(registry: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await registry.metrics()).split("\n")) {
    const m = line.match(/^workqueue_depth\{name="q",controller="q",priority="([^"]*)"\} (\S+)$/);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

Deno.test("workqueueMetrics labels the depth by priority and the adds not", async () => {
  const registry = new Registry();
  const queue = new WorkQueue<string>({
    name: "q",
    clock: new FakeClock(),
    metrics: workqueueMetrics(registry, "q"),
  });
  assert.deepEqual(await depths(registry), { "0": 0 });
  queue.add("a", { priority: LOW_PRIORITY });
  queue.add("b", { priority: LOW_PRIORITY });
  queue.add("c");
  queue.add("b", { priority: 7 });
  assert.deepEqual(await depths(registry), { "0": 1, "-100": 1, "7": 1 });
  assert.equal((await queue.get()).key, "b");
  assert.deepEqual(await depths(registry), { "0": 1, "-100": 1, "7": 0 });
  queue.done("b");
  const text = await registry.metrics();
  assert.match(text, /^workqueue_adds_total\{name="q",controller="q"\} 3$/m);
  assert.match(
    text,
    /^# HELP workqueue_depth Current depth of workqueue by workqueue and priority$/m,
  );
  await queue.shutDownWithDrain();
});

Deno.test("workqueueMetrics sums priorities past the 25th under one series", async () => {
  const registry = new Registry();
  const queue = new WorkQueue<number>({
    name: "q",
    clock: new FakeClock(),
    metrics: workqueueMetrics(registry, "q"),
  });
  for (let p = 1; p <= 30; p++) queue.add(p, { priority: p });
  const d = await depths(registry);
  assert.equal(Object.keys(d).length, 27, "the initial 0, 1..25 and the overflow");
  assert.equal(d["25"], 1);
  assert.equal(d["26"], undefined);
  assert.equal(d["exceeded_cardinality_limit"], 5, "priorities 26..30");
  for (let i = 0; i < 5; i++) queue.done((await queue.get()).key!); // 30..26 first
  assert.equal((await depths(registry))["exceeded_cardinality_limit"], 0);
  await queue.shutDownWithDrain();
});
