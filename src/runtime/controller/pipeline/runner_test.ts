import assert from "node:assert/strict";
import type { Client } from "../../../client/client.ts";
import type { KubeObject } from "../../../core/object.ts";
import { resource } from "../../../core/resource.ts";
import { FakeClock } from "../../../testing/fake_clock.ts";
import { InformerFactory } from "../../cache/informer_factory.ts";
import type { RateLimiter } from "../../queue/rate_limiter.ts";
import { EventRecorder } from "../events.ts";
import { reconcile } from "../reconcile.ts";
import { ControllerRuntime } from "./runner.ts";

const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
const cm = (name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "ns", uid: `uid-${name}`, resourceVersion: "1" },
});

/** A stand-in API server: lists `items` once, watches quietly, records every write. */
function standIn(items: KubeObject[]) {
  const writes: string[] = [];
  const write = (verb: string) => () => {
    writes.push(verb);
    return Promise.resolve(cm("x"));
  };
  const client = {
    list: () => Promise.resolve({ metadata: { resourceVersion: "1" }, items }),
    watchEvents: (_r: unknown, o: { signal?: AbortSignal }) =>
      (async function* () {
        await new Promise((resolve) => o.signal?.addEventListener("abort", resolve));
        yield* []; // the watch ends without an event
      })(),
    apply: write("apply"),
    patch: write("patch"),
    patchStatus: write("patchStatus"),
    create: write("create"),
    replace: write("replace"),
    delete: write("delete"),
  } as unknown as Client;
  return { client, writes };
}

/** 5 ms doubling per key, recording what it hands out. */
function doubling(whens: number[]): RateLimiter<string> {
  const n = new Map<string, number>();
  return {
    when(key) {
      const i = n.get(key) ?? 0;
      n.set(key, i + 1);
      whens.push(5 * 2 ** i);
      return 5 * 2 ** i;
    },
    forget: (key) => void n.delete(key),
    numRequeues: (key) => n.get(key) ?? 0,
  };
}

Deno.test("ControllerRuntime cuts a reconcile at timeoutMs and serves other keys meanwhile", async () => {
  const clock = new FakeClock();
  const { client, writes } = standIn([cm("hang"), cm("a"), cm("b")]);
  const hangs: { signal: AbortSignal; write?: unknown }[] = [];
  const others: { key: string; hangs: number }[] = [];
  let timeouts = 0;
  const whens: number[] = [];
  const controller = reconcile(ConfigMap, {
    name: "cm",
    run: { timeoutMs: 1_000 },
    async reconcile(obj, ctx) {
      if (obj.metadata.name !== "hang") {
        return void others.push({ key: ctx.key, hangs: hangs.length });
      }
      const h: (typeof hangs)[number] = { signal: ctx.signal };
      hangs.push(h);
      // Ignores the abort, then still tries to write, then never settles.
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      h.write = await ctx.patch(ConfigMap, "hang", { metadata: { labels: { late: "1" } } })
        .then(() => "sent", (err) => err);
      await new Promise(() => {});
    },
  });
  await using informers = new InformerFactory({ client });
  const runtime = new ControllerRuntime(controller, {
    client,
    informers,
    clock,
    rateLimiter: doubling(whens),
    events: new EventRecorder(client, { component: "cm" }),
    metrics: { timeout: () => void timeouts++ },
  });
  informers.start();
  await runtime.start();
  // The initial list queued all three; whichever order, hang holds the only worker for 1 s.
  await clock.tickAsync(0);
  assert.equal(hangs.length, 1);
  await clock.tickAsync(999);
  assert.ok(!hangs[0].signal.aborted);
  const before = others.length;
  await clock.tickAsync(1);
  assert.ok(hangs[0].signal.aborted, "ctx.signal did not abort at the bound");
  assert.equal((hangs[0].signal.reason as Error).name, "TimeoutError");
  assert.deepEqual(others.map((o) => o.key).sort(), ["ns/a", "ns/b"]);
  assert.ok(others.slice(before).every((o) => o.hangs === 1), "served after hang was cut");
  assert.equal(hangs[0].write, hangs[0].signal.reason, "the late write was not refused");
  // Retried under backoff: 5 ms, then 10 ms after the next cut, ...
  for (const [i, wait] of [[1, 5], [2, 10], [3, 20]]) {
    assert.equal(timeouts, i);
    assert.equal(runtime.queue.numRequeues("ns/hang"), i);
    await clock.tickAsync(wait - 1);
    assert.equal(hangs.length, i, `attempt ${i + 1} before its backoff`);
    await clock.tickAsync(1);
    assert.equal(hangs.length, i + 1);
    await clock.tickAsync(1_000);
  }
  assert.deepEqual(whens, [5, 10, 20, 40]);
  assert.deepEqual(writes, [], "a cut attempt wrote");
  const stopped = runtime.stop(5_000);
  await clock.tickAsync(1_000);
  assert.ok(await stopped);
});
