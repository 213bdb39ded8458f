import assert from "node:assert/strict";
import { FakeClock } from "./fake_clock.ts";
import { FakeApi } from "./_fake_api.ts";
import { informer } from "./informer.ts";
import { InformerFactory } from "./informer_factory.ts";
import type { KubeObject } from "./object.ts";
import { resource } from "./resource.ts";
import { objectKey } from "./store.ts";
import { WatchError } from "./watch_error.ts";

const ConfigMap = resource<KubeObject & { data?: Record<string, string> }>({
  group: "",
  version: "v1",
  kind: "ConfigMap",
});

function cm(name: string, v = name, ns = "default") {
  return {
    metadata: { name, namespace: ns, managedFields: [{ manager: "test" }], labels: { v } },
    data: { v },
  };
}

async function until(cond: () => boolean, what = "condition"): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await FakeClock.runMicrotasks();
  }
  throw new Error(`Timed out waiting for ${what}`);
}

function recorder() {
  const log: string[] = [];
  return {
    log,
    handlers: {
      onAdd: (o: KubeObject) => void log.push(`add ${objectKey(o)}`),
      onUpdate: (a: KubeObject, b: KubeObject) =>
        void log.push(
          `update ${objectKey(a)} ${a.metadata.resourceVersion}->${b.metadata.resourceVersion}`,
        ),
      onDelete: (o: KubeObject) => void log.push(`delete ${objectKey(o)}`),
      onError: (e: WatchError) => void log.push(`error ${e.code ?? e.reason}`),
    },
  };
}

function sameAsServer(inf: { list(): KubeObject[] }, api: FakeApi) {
  assert.deepEqual(
    inf.list().map((o) => `${objectKey(o)}@${o.metadata.resourceVersion}`).sort(),
    [...api.objects.values()].map((o) => `${objectKey(o)}@${o.metadata.resourceVersion}`).sort(),
  );
}

Deno.test("informer() caches, strips managedFields and calls handlers after the store changed", async () => {
  const api = new FakeApi();
  api.put(cm("a"));
  api.put(cm("b"));
  const clock = new FakeClock();
  await using inf = informer(ConfigMap, { client: api, clock, indexes: { v: (o) => [o.data!.v] } });
  const r = recorder();
  const seenInHandler: unknown[] = [];
  inf.addHandler(r.handlers);
  inf.onUpdate((_, n) => void seenInHandler.push(inf.get(objectKey(n))?.data?.v));
  assert.equal(inf.hasSynced, false);
  inf.start();
  inf.start(); // idempotent
  await inf.synced();
  assert.deepEqual(r.log.sort(), ["add default/a", "add default/b"]);
  assert.equal(inf.get({ name: "a", namespace: "default" })?.metadata.managedFields, undefined);
  assert.equal(inf.store.byIndex("v", "b").length, 1);
  await until(() => api.openWatches === 1);
  api.put(cm("a", "a2"));
  api.remove("default/b");
  api.put(cm("c"));
  await until(() => r.log.length === 5);
  assert.deepEqual(r.log.slice(2), [
    "update default/a 101->103",
    "delete default/b",
    "add default/c",
  ]);
  assert.deepEqual(seenInHandler, ["a2"]);
  sameAsServer(inf, api);
  assert.ok(inf.health().healthy);
  assert.equal(inf.lastEventAt, clock.now());
  // A late handler is told about every object held.
  const late: string[] = [];
  inf.onAdd((o) => void late.push(objectKey(o)));
  assert.deepEqual(late.sort(), ["default/a", "default/c"]);
});

Deno.test("informer() reports deletions a relist after 410 Gone reveals", async () => {
  const api = new FakeApi();
  for (const n of ["a", "b", "c"]) api.put(cm(n));
  const clock = new FakeClock();
  await using inf = informer(ConfigMap, { client: api, clock }).start();
  const r = recorder();
  await inf.synced();
  inf.addHandler(r.handlers);
  r.log.length = 0;
  await until(() => api.openWatches === 1);
  await clock.tickAsync(2_000);
  api.endWatches();
  api.remove("default/a");
  api.put(cm("b", "b2"));
  api.put(cm("d"));
  api.compact(); // the resumed watch gets 410 Gone and relists
  await until(() => inf.stats?.lists === 2 && api.openWatches === 1, "the relist");
  assert.deepEqual(r.log, ["delete default/a", "add default/d", "update default/b 102->105"]);
  sameAsServer(inf, api);
});

Deno.test("informer() rejects synced() on a persistent error, keeps retrying and recovers", async () => {
  const api = new FakeApi();
  api.put(cm("a"));
  api.failLists.push(
    FakeApi.apiError(403, "Forbidden", "no"),
    FakeApi.apiError(403, "Forbidden", "no"),
  );
  const clock = new FakeClock();
  await using inf = informer(ConfigMap, { client: api, clock });
  const r = recorder();
  inf.addHandler(r.handlers);
  const first = inf.start().synced();
  await assert.rejects(first, (e) => e instanceof WatchError && e.code === 403);
  assert.equal(inf.error?.code, 403);
  assert.equal(inf.health().healthy, false);
  await assert.rejects(inf.synced(), WatchError);
  await clock.tickAsync(5_000);
  await inf.synced();
  assert.equal(inf.error, undefined);
  assert.deepEqual(r.log, ["error 403", "add default/a"]);
  assert.ok(inf.health().healthy);
});

Deno.test("informer() survives throwing handlers and stops for good", async () => {
  const api = new FakeApi();
  api.put(cm("a"));
  const inf = informer(ConfigMap, { client: api, clock: new FakeClock() });
  let calls = 0;
  inf.onAdd(() => {
    calls++;
    throw new Error("boom");
  });
  inf.onAdd(() => Promise.reject(new Error("async boom")));
  await inf.start().synced();
  await until(() => api.openWatches === 1);
  api.put(cm("b"));
  await until(() => calls === 2);
  await inf.stop();
  assert.equal(api.openWatches, 0);
  assert.throws(() => inf.start(), TypeError);
  assert.equal(inf.health().state, "stopped");
  const never = informer(ConfigMap, { client: api });
  const waiting = never.synced();
  await never.stop();
  await assert.rejects(
    waiting,
    /Cannot wait for informer for ConfigMap \(v1\) in all namespaces to sync: it was stopped/,
  );
  await assert.rejects(never.synced(), /it was stopped/);
  // A signal ends the wait.
  const ctl = new AbortController();
  const aborted = informer(ConfigMap, { client: api }).synced({ signal: ctl.signal });
  ctl.abort(new Error("gave up"));
  await assert.rejects(aborted, /gave up/);
});

Deno.test("informer() resyncs every resyncMs", async () => {
  const api = new FakeApi();
  api.put(cm("a"));
  const clock = new FakeClock();
  await using inf = informer(ConfigMap, { client: api, clock, resyncMs: 60_000 }).start();
  const r = recorder();
  await inf.synced();
  inf.onUpdate(r.handlers.onUpdate);
  await clock.tickAsync(60_000);
  assert.deepEqual(r.log, ["update default/a 101->101"]);
  await clock.tickAsync(60_000);
  assert.equal(r.log.length, 2);
});

Deno.test("InformerFactory shares one informer and one watch per kind and query", async () => {
  const api = new FakeApi();
  api.put(cm("a", "a", "x"));
  api.put(cm("b", "b", "y"));
  const clock = new FakeClock();
  await using informers = new InformerFactory({ client: api, clock });
  const a = informers.for(ConfigMap, { namespace: "x" });
  const b = informers.for(ConfigMap, { namespace: "x", indexes: { v: (o) => [o.data!.v] } });
  const all = informers.for(ConfigMap);
  assert.equal(a, b);
  assert.notEqual(a, all);
  assert.equal(informers.size, 2);
  informers.start();
  await informers.synced();
  const late = informers.for(ConfigMap, { namespace: "y" });
  await late.synced();
  await until(() => api.openWatches === 3);
  assert.equal(api.watchCalls.length, 3);
  assert.deepEqual(a.store.byIndex("v", "a").map(objectKey), ["x/a"]);
  assert.equal(all.list().length, 2);
  assert.equal(late.list().length, 1);
  await informers.stop();
  assert.equal(api.openWatches, 0);
  assert.throws(() => informers.for(ConfigMap), TypeError);
});
