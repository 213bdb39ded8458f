import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import { getLogger } from "../../util/log.ts";
import type { Client } from "../../client/client.ts";
import type { KubeObject } from "../../core/object.ts";
import type { CacheReader } from "../cache/reader.ts";
import { Background, type BackgroundSample } from "./background.ts";
import { daemon, every } from "./timers.ts";

function setup(opts: {
  timers?: ReturnType<typeof every>[];
  daemons?: ReturnType<typeof daemon>[];
  reconciling?: (key: string) => boolean;
}) {
  const clock = new FakeClock();
  const objects = new Map<string, KubeObject>();
  const samples: BackgroundSample[] = [];
  const bg = new Background<KubeObject>({
    controller: "c",
    timers: opts.timers ?? [],
    daemons: opts.daemons ?? [],
    clock,
    log: getLogger(["kubeno", "test"]),
    client: {} as Client,
    metrics: { background: (s) => void samples.push(s) },
    get: (key) => objects.get(key),
    reconciling: opts.reconciling ?? (() => false),
    cache: () => ({} as CacheReader),
  });
  const add = (key: string) => {
    objects.set(key, { metadata: { name: key.split("/")[1], namespace: key.split("/")[0] } });
    bg.seen(key);
  };
  const remove = (key: string) => {
    objects.delete(key);
    bg.gone(key);
  };
  return { clock, objects, samples, bg, add, remove };
}

Deno.test("a timer runs on every object at its interval and stops for a deleted one", async () => {
  const calls = new Map<string, number[]>();
  const t = setup({
    timers: [every(1_000, (_obj, ctx) => {
      calls.set(ctx.key, [...calls.get(ctx.key) ?? [], t.clock.now()]);
    }, { jitter: 0 })],
  });
  t.objects.set("ns/a", { metadata: { name: "a", namespace: "ns" } });
  t.bg.start(["ns/a"]);
  t.add("ns/b");
  for (let i = 0; i < 3; i++) await t.clock.tickAsync(1_000);
  assert.deepEqual(calls.get("ns/a"), [1_000, 2_000, 3_000]);
  assert.deepEqual(calls.get("ns/b"), [1_000, 2_000, 3_000]);
  t.remove("ns/a");
  for (let i = 0; i < 2; i++) await t.clock.tickAsync(1_000);
  assert.deepEqual(calls.get("ns/a"), [1_000, 2_000, 3_000], "no call after the delete");
  assert.equal(calls.get("ns/b")?.length, 5);
  assert.ok(await t.bg.stop(1_000, "test"));
  assert.equal(t.clock.pending, 0, "no timer left");
});

Deno.test("a timer's interval varies within its jitter", async () => {
  const at: number[] = [];
  const t = setup({ timers: [every(1_000, () => void at.push(t.clock.now()), { jitter: 0.2 })] });
  t.objects.set("ns/a", { metadata: { name: "a", namespace: "ns" } });
  t.bg.start(["ns/a"]);
  for (let i = 0; i < 20; i++) await t.clock.nextAsync();
  const gaps = at.map((v, i) => v - (at[i - 1] ?? 0));
  assert.ok(gaps.every((g) => g >= 800 && g <= 1_200), gaps.join());
  assert.ok(new Set(gaps).size > 1, "the intervals vary");
  await t.bg.stop(0, "test");
});

Deno.test("a timer's tick is skipped while its key is reconciled, and holds a reconcile", async () => {
  let busy = true;
  let calls = 0;
  let release!: () => void;
  const t = setup({
    reconciling: () => busy,
    timers: [every(1_000, async () => {
      calls++;
      await new Promise<void>((r) => release = r);
    }, { jitter: 0 })],
  });
  t.objects.set("ns/a", { metadata: { name: "a", namespace: "ns" } });
  t.bg.start(["ns/a"]);
  await t.clock.tickAsync(1_000);
  assert.equal(calls, 0);
  assert.deepEqual(t.samples.map((s) => s.result), ["skipped"]);
  busy = false;
  await t.clock.tickAsync(1_000);
  assert.equal(calls, 1);
  const hold = t.bg.hold("ns/a");
  assert.ok(hold, "a reconcile of ns/a would wait");
  release();
  await hold;
  assert.equal(t.bg.hold("ns/a"), undefined);
  await t.bg.stop(0, "test");
});

Deno.test("a daemon's signal fires on delete and on stop, with the reason", async () => {
  const reasons = new Map<string, string>();
  const t = setup({
    daemons: [daemon(async (_obj, ctx) => {
      await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r()));
      reasons.set(ctx.key, (ctx.signal.reason as Error).message);
    })],
  });
  t.objects.set("ns/a", { metadata: { name: "a", namespace: "ns" } });
  t.objects.set("ns/b", { metadata: { name: "b", namespace: "ns" } });
  t.bg.start(["ns/a", "ns/b"]);
  t.remove("ns/a");
  await FakeClock.runMicrotasks();
  assert.equal(reasons.get("ns/a"), 'Object "ns/a" was deleted');
  assert.ok(await t.bg.stop(1_000, "leadership lost"));
  assert.equal(reasons.get("ns/b"), "leadership lost");
});

Deno.test("a throwing daemon is restarted with backoff", async () => {
  const starts: number[] = [];
  const t = setup({
    daemons: [daemon(() => {
      starts.push(t.clock.now());
      throw new Error("boom");
    }, { backoffMs: 1_000, maxBackoffMs: 4_000 })],
  });
  t.objects.set("ns/a", { metadata: { name: "a", namespace: "ns" } });
  t.bg.start(["ns/a"]);
  for (let i = 0; i < 5; i++) await t.clock.nextAsync();
  assert.deepEqual(starts, [0, 1_000, 3_000, 7_000, 11_000, 15_000]);
  assert.equal(t.samples.filter((s) => s.result === "error").length, 6);
  await t.bg.stop(0, "test");
});

Deno.test("objects leaving this replica end their daemons, as last seen", async () => {
  const reasons = new Map<string, string>();
  const t = setup({
    daemons: [daemon(async (_obj, ctx) => {
      await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r()));
      reasons.set(ctx.key, (ctx.signal.reason as Error).message);
    })],
  });
  t.bg.start([]);
  t.add("ns/a");
  t.add("ns/b");
  // The shard filter drops them from the cache silently: no delete.
  t.objects.clear();
  await t.bg.leave((obj) => obj.metadata.name === "a", "the shard left");
  assert.equal(reasons.get("ns/a"), "the shard left");
  assert.equal(reasons.has("ns/b"), false);
  await t.bg.stop(0, "test");
});
