import assert from "node:assert/strict";
import { FakeClock } from "./fake_clock.ts";
import { FakeApi } from "./_fake_api.ts";
import type { KubeObject } from "./object.ts";
import { resource } from "./resource.ts";
import { objectKey } from "./store.ts";
import { watch, type WatchEvent, type WatchOptions, type WatchStream } from "./watch.ts";
import { WatchError } from "./watch_error.ts";

const ConfigMap = resource<KubeObject>({ group: "", version: "v1", kind: "ConfigMap" });

function cm(name: string, ns = "default", data?: string): KubeObject & { data?: unknown } {
  return { metadata: { name, namespace: ns }, data: { v: data ?? name } };
}

/** Runs a stream in the background, applying events to a view like an informer would. */
function consume(stream: WatchStream<KubeObject>) {
  const events: WatchEvent<KubeObject>[] = [];
  const view = new Map<string, KubeObject>();
  const state: { error?: unknown; done: boolean } = { done: false };
  const done = (async () => {
    try {
      for await (const ev of stream) {
        events.push(ev);
        if (ev.type === "relisted") {
          view.clear();
          for (const o of ev.objects) view.set(objectKey(o), o);
        } else if (ev.type === "added" || ev.type === "modified") {
          view.set(objectKey(ev.object), ev.object);
        } else if (ev.type === "deleted") view.delete(objectKey(ev.object));
      }
    } catch (err) {
      state.error = err;
    } finally {
      state.done = true;
    }
  })();
  return { events, view, state, done, types: () => events.map((e) => e.type) };
}

async function until(cond: () => boolean, what = "condition"): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await FakeClock.runMicrotasks();
  }
  throw new Error(`Timed out waiting for ${what}`);
}

function setup(options: Partial<WatchOptions> = {}) {
  const api = new FakeApi();
  const clock = new FakeClock(1_000_000);
  const ctl = new AbortController();
  const stream = watch(ConfigMap, {
    client: api,
    clock,
    signal: ctl.signal,
    pageSize: 2,
    backoff: { jitter: 0 },
    ...options,
  });
  return { api, clock, ctl, stream };
}

function sameView(view: Map<string, KubeObject>, api: FakeApi) {
  assert.deepEqual(
    [...view.entries()].map(([k, o]) => [k, o.metadata.resourceVersion]).sort(),
    [...api.objects.entries()].map(([k, o]) => [k, o.metadata.resourceVersion]).sort(),
  );
}

Deno.test("watch() lists in pages, then watches from the list's resourceVersion with bookmarks", async () => {
  const { api, ctl, stream } = setup();
  for (const n of ["a", "b", "c", "d", "e"]) api.put(cm(n));
  const c = consume(stream);
  await until(() => api.openWatches === 1, "the watch");
  assert.equal(api.listCalls.length, 3);
  assert.deepEqual(api.listCalls.map((l) => l.limit), [2, 2, 2]);
  assert.deepEqual(c.types(), ["relisted"]);
  const first = c.events[0] as Extract<WatchEvent<KubeObject>, { type: "relisted" }>;
  assert.equal(first.objects.length, 5);
  assert.equal(first.objects[0].kind, "ConfigMap");
  assert.equal(first.resourceVersion, "105");
  const call = api.watchCalls[0];
  assert.equal(call.resourceVersion, "105");
  assert.equal(call.allowWatchBookmarks, true);
  assert.ok((call.timeoutSeconds as number) >= 300 && (call.timeoutSeconds as number) < 600);
  api.put(cm("f"));
  api.put(cm("a", "default", "changed"));
  api.remove("default/b");
  api.bookmark();
  await until(() => c.events.length === 5, "the events");
  assert.deepEqual(c.types(), ["relisted", "added", "modified", "deleted", "bookmark"]);
  assert.equal(stream.stats.resourceVersion, "108");
  sameView(c.view, api);
  ctl.abort();
  await c.done;
  assert.equal(c.state.error, undefined);
  assert.equal(stream.stats.state, "stopped");
  assert.equal(api.openWatches, 0);
});

Deno.test("watch() resumes from the last resourceVersion after a server timeout or a dropped connection", async () => {
  const { api, clock, ctl, stream } = setup();
  api.put(cm("a"));
  const c = consume(stream);
  await until(() => api.openWatches === 1);
  api.put(cm("b"));
  api.bookmark();
  await until(() => c.events.length === 3);
  await clock.tickAsync(2_000); // the watch has been healthy for a while
  api.endWatches();
  // Changes while no watch is open are replayed by the resumed watch, not relisted.
  api.put(cm("c"));
  await until(() => api.watchCalls.length === 2 && api.openWatches === 1, "the resumed watch");
  assert.equal(api.watchCalls[1].resourceVersion, "102");
  await until(() => c.view.has("default/c"));
  api.put(cm("d"));
  await until(() => c.view.has("default/d"));
  api.breakWatches();
  api.remove("default/a");
  await until(() => api.watchCalls.length === 3 && api.openWatches === 1);
  assert.equal(api.watchCalls[2].resourceVersion, "104");
  await until(() => !c.view.has("default/a"));
  sameView(c.view, api);
  assert.equal(api.listCalls.length, 1);
  assert.equal(c.types().filter((t) => t === "added").length, 3, "no event repeated");
  assert.equal(stream.stats.failures, 0);
  assert.equal(stream.stats.maxOpenRequests, 1);
  assert.equal(api.maxOpenWatches, 1);
  ctl.abort();
  await c.done;
});

Deno.test("watch() relists on 410 Gone, from an ERROR event or from the watch request", async () => {
  const { api, clock, ctl, stream } = setup();
  api.put(cm("a"));
  api.put(cm("b"));
  const c = consume(stream);
  await until(() => api.openWatches === 1);
  api.errorEvent({ code: 410, reason: "Expired", message: "too old resource version: 1 (2)" });
  await until(() => api.listCalls.length === 2 && api.openWatches === 1, "the relist");
  // Deleted while the stream was between watches: the relist reveals it.
  await clock.tickAsync(2_000);
  api.endWatches();
  api.remove("default/a");
  api.put(cm("c"));
  api.compact();
  await until(() => c.types().filter((t) => t === "relisted").length === 3, "the second relist");
  await until(() => api.openWatches === 1);
  sameView(c.view, api);
  assert.equal(stream.stats.lists, 3);
  assert.equal(stream.stats.failures, 0);
  assert.equal(c.types().includes("error"), false);
  ctl.abort();
  await c.done;
});

Deno.test("watch() restarts a list whose continue token expired", async () => {
  const { api, ctl, stream } = setup();
  for (const n of ["a", "b", "c", "d"]) api.put(cm(n));
  api.failLists.push(undefined, FakeApi.gone());
  const c = consume(stream);
  await until(() => api.openWatches === 1);
  assert.deepEqual(api.listCalls.map((l) => l.continue), [undefined, "104:2", undefined, "104:2"]);
  assert.equal((c.events[0] as { objects: unknown[] }).objects.length, 4);
  ctl.abort();
  await c.done;
});

Deno.test("watch() backs off with growing, bounded delays and reports once per state change", async () => {
  const { api, clock, ctl, stream } = setup({
    backoff: { jitter: 0, initialMs: 100, maxMs: 1_000 },
  });
  for (let i = 0; i < 8; i++) api.failLists.push(FakeApi.refused());
  api.failLists.push(FakeApi.apiError(503, "ServiceUnavailable", "etcd is down"));
  const c = consume(stream);
  const attemptsAt: number[] = [];
  const start = clock.now();
  while (api.listCalls.length < 10) {
    await until(() => stream.stats.state === "backoff", "the backoff");
    const before = api.listCalls.length;
    await clock.nextAsync();
    await until(() => true);
    if (api.listCalls.length > before) attemptsAt.push(clock.now() - start);
  }
  assert.deepEqual(attemptsAt, [100, 300, 700, 1_500, 2_500, 3_500, 4_500, 5_500, 6_500]);
  await until(() => api.openWatches === 1);
  // One error event for the refused connections, one for the 503, none per retry.
  const errors = c.events.filter((e) => e.type === "error").map((e) =>
    (e as { error: WatchError }).error
  );
  assert.equal(errors.length, 2);
  assert.equal(errors[0].reason, "ConnectionFailed");
  assert.match(
    errors[0].message,
    /^Cannot list ConfigMap \(v1\) in all namespaces from Kubernetes API server "https:\/\/127.0.0.1:1": Connection refused$/,
  );
  assert.equal(errors[1].code, 503);
  assert.equal(errors[0].persistent, false);
  assert.equal(stream.stats.error, undefined, "recovered");
  assert.equal(stream.stats.failures, 9);
  ctl.abort();
  await c.done;
});

Deno.test("watch() throws persistent errors, or retries them with retryPersistent", async () => {
  {
    const { api, stream } = setup();
    api.failLists.push(
      FakeApi.apiError(403, "Forbidden", 'configmaps is forbidden: User "bob" cannot list'),
    );
    const c = consume(stream);
    await c.done;
    assert.ok(c.state.error instanceof WatchError);
    assert.equal(c.state.error.persistent, true);
    assert.equal(c.state.error.code, 403);
    assert.match(
      c.state.error.message,
      /^Cannot list configmaps: Forbidden: configmaps is forbidden: User "bob" cannot list$/,
    );
    assert.equal(api.listCalls.length, 1);
  }
  {
    const { api, clock, ctl, stream } = setup({ retryPersistent: true });
    api.failLists.push(
      FakeApi.apiError(403, "Forbidden", "no"),
      FakeApi.apiError(403, "Forbidden", "no"),
    );
    const c = consume(stream);
    await until(() => c.events.length === 1);
    assert.equal(c.types()[0], "error");
    await clock.tickAsync(10_000);
    await until(() => api.openWatches === 1);
    assert.deepEqual(c.types(), ["error", "relisted"]);
    ctl.abort();
    await c.done;
  }
});

Deno.test("watch() restarts a stalled watch from the last resourceVersion, one request at a time", async () => {
  const { api, clock, ctl, stream } = setup({ stallTimeoutMs: 5_000 });
  api.put(cm("a"));
  const c = consume(stream);
  await until(() => api.openWatches === 1);
  await clock.tickAsync(4_000);
  api.bookmark(); // keeps it alive
  await until(() => c.events.length === 2);
  await clock.tickAsync(4_000);
  assert.equal(stream.stats.stalls, 0);
  await clock.tickAsync(1_000);
  await until(() => stream.stats.stalls === 1, "the stall");
  assert.equal(api.openWatches, 0, "the stalled request was aborted");
  const err = c.events.at(-1) as { type: string; error: WatchError };
  assert.equal(err.type, "error");
  assert.equal(err.error.reason, "Stalled");
  assert.match(
    err.error.message,
    /^Cannot watch ConfigMap \(v1\) in all namespaces: no event or bookmark arrived within 5000 ms \(stalled\)$/,
  );
  await clock.tickAsync(1_000);
  await until(() => api.openWatches === 1, "the restarted watch");
  assert.equal(api.watchCalls[1].resourceVersion, "101");
  assert.equal(api.listCalls.length, 1);
  assert.equal(api.maxOpenWatches, 1);
  assert.equal(stream.stats.maxOpenRequests, 1);
  ctl.abort();
  await c.done;
});

Deno.test("watch() does not count a slow consumer as a stall", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  const stream = watch(ConfigMap, { client: api, clock, stallTimeoutMs: 1_000 });
  api.put(cm("a"));
  const it = stream[Symbol.asyncIterator]();
  assert.equal((await it.next()).value?.type, "relisted");
  const pending = it.next();
  await until(() => api.openWatches === 1);
  api.put(cm("b"));
  assert.equal((await pending).value?.type, "added");
  await clock.tickAsync(10_000); // the consumer holds the event for 10 s
  assert.equal(stream.stats.stalls, 0);
  await it.return?.();
  assert.equal(api.openWatches, 0);
});

Deno.test("watch() ends promptly when aborted during backoff", async () => {
  const { api, ctl, stream } = setup();
  api.failLists.push(FakeApi.refused());
  const c = consume(stream);
  await until(() => stream.stats.state === "backoff");
  ctl.abort();
  await c.done;
  assert.equal(c.state.error, undefined);
  assert.equal(stream.stats.state, "stopped");
  assert.throws(() => stream[Symbol.asyncIterator](), TypeError);
});

Deno.test("watch() backs off instead of relisting in a loop when every watch is Gone", async () => {
  const { api, clock, ctl, stream } = setup();
  api.put(cm("a"));
  api.failWatches.push(FakeApi.gone(), FakeApi.gone());
  const c = consume(stream);
  await until(() => stream.stats.state === "backoff", "the backoff");
  assert.equal(api.listCalls.length, 2, "one immediate relist, then backoff");
  const err = c.events.at(-1) as { type: string; error: WatchError };
  assert.equal(err.error.code, 410);
  await clock.tickAsync(1_000);
  await until(() => api.openWatches === 1, "the watch after backoff");
  assert.equal(api.listCalls.length, 3);
  ctl.abort();
  await c.done;
});
