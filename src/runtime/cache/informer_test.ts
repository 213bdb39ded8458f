// Informer with a stand-in WatchClient: what its handlers are told, the store they read, and
// its lifecycle (synced, stop, resync). The objects and watch feeds are the watch layer's
// (tests/_watch_feed.ts).
import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import type { ObjectList, RawWatchEvent } from "../../client/types.ts";
import type { KubeObject } from "../../core/object.ts";
import { type CM, cm, ConfigMap, Feed, page } from "../../../tests/_watch_feed.ts";
import type { ObjectEvent, WatchClient } from "../watch/watch.ts";
import { Informer, informer } from "./informer.ts";

/** A watch `ERROR` event: the resourceVersion expired (410), so the stream lists again. */
const expired: RawWatchEvent<CM> = { type: "ERROR", object: { code: 410, reason: "Expired" } };

type Options = Record<string, unknown> & { signal?: AbortSignal; onConnected?: () => void };

/**
 * A stand-in client: each list request answers the next of `lists`, each watch request the
 * next of `watches`; when none is left, the request never answers. Records the requests.
 */
function standIn(script: { lists?: ObjectList<CM>[]; watches?: (Feed | RawWatchEvent<CM>[])[] }) {
  const lists = [...(script.lists ?? [])];
  const watches = (script.watches ?? []).map((w) => w instanceof Feed ? w : new Feed(w));
  const listCalls: { options: Options }[] = [];
  const watchCalls: { options: Options }[] = [];
  const client = {
    list(_: unknown, options: Options) {
      listCalls.push({ options });
      const answer = lists.shift();
      return answer ? Promise.resolve(structuredClone(answer)) : new Promise<never>(() => {});
    },
    watchEvents(_: unknown, options: Options) {
      watchCalls.push({ options });
      options.onConnected?.();
      return (watches.shift() ?? new Feed()).events();
    },
  } as unknown as WatchClient;
  return { client, listCalls, watchCalls };
}

/** Lets the informer's stream run (on real macrotasks) until `cond` holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await FakeClock.runMicrotasks();
  }
  assert.fail(`Timed out waiting for ${what}`);
}

/** Lets whatever is queued run for a while, for checking that nothing happens. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await FakeClock.runMicrotasks();
}

/** A short form of an event: `added a@1`, `modified a@2<1`, `deleted a@1`. */
function show(ev: ObjectEvent<CM>): string {
  const at = (o: KubeObject) => `${o.metadata.name}@${o.metadata.resourceVersion}`;
  return ev.type === "modified" && ev.old
    ? `modified ${at(ev.object)}<${ev.old.metadata.resourceVersion}`
    : `${ev.type} ${at(ev.object)}`;
}

Deno.test("Informer: handlers get added, modified with old, and deleted, after the store has them", async () => {
  const feed = new Feed();
  const fake = standIn({ lists: [page("1", [cm("a", "1")])], watches: [feed] });
  await using inf = informer(ConfigMap, { client: fake.client, namespace: "ns" });
  const seen: string[] = [];
  const inStore: (string | undefined)[] = [];
  inf.onEvent((ev) => {
    seen.push(show(ev));
    inStore.push(
      inf.get({ name: ev.object.metadata.name!, namespace: "ns" })?.metadata.resourceVersion,
    );
  });
  inf.start();
  await inf.synced();
  assert.deepEqual(seen, ["added a@1"]);
  await until(() => fake.watchCalls.length === 1, "the watch");
  assert.equal(fake.watchCalls[0].options.resourceVersion, "1", "watches from the list");
  assert.equal(fake.listCalls[0].options.namespace, "ns");

  feed.push(
    { type: "ADDED", object: cm("b", "2") },
    { type: "MODIFIED", object: cm("a", "3") },
    { type: "DELETED", object: cm("b", "4") },
  );
  await until(() => seen.length === 4, "three more events");
  assert.deepEqual(seen, ["added a@1", "added b@2", "modified a@3<1", "deleted b@4"]);
  assert.deepEqual(inStore, ["1", "2", "3", undefined], "the store reflects each change first");
  assert.deepEqual(inf.list().map((o) => o.metadata.name), ["a"]);

  // A late handler first hears of every object held.
  const late: string[] = [];
  inf.onEvent((ev) => void late.push(show(ev)));
  assert.deepEqual(late, ["added a@3"]);
});

Deno.test("Informer: a relist reports what vanished as deleted, what is new as added, what changed as modified", async () => {
  const fake = standIn({
    lists: [
      page("1", [cm("a", "1"), cm("b", "1"), cm("c", "1")]),
      page("9", [cm("a", "1"), cm("b", "8"), cm("d", "7")]),
    ],
    // The first watch expires: the stream lists again at once.
    watches: [[expired]],
  });
  await using inf = informer(ConfigMap, { client: fake.client }).start();
  const seen: string[] = [];
  inf.onEvent((ev) => void seen.push(show(ev)));
  await inf.synced();
  await until(() => fake.listCalls.length === 2 && seen.length === 6, "the relist");
  assert.deepEqual(seen.slice(3).sort(), ["added d@7", "deleted c@1", "modified b@8<1"]);
  assert.deepEqual(inf.list().map((o) => o.metadata.name).sort(), ["a", "b", "d"]);
  assert.equal(inf.store.resourceVersion, "9");
});

Deno.test("Informer: stored objects are deeply frozen and stripped of managedFields unless transform is null", async () => {
  const obj = () =>
    ({
      metadata: {
        name: "a",
        namespace: "ns",
        resourceVersion: "1",
        labels: { app: "web" },
        managedFields: [{ manager: "kubectl" }],
      },
      data: { k: "v" },
    }) as CM;
  const fake = standIn({ lists: [page("1", [obj()])] });
  await using inf = informer(ConfigMap, { client: fake.client }).start();
  await inf.synced();
  const held = inf.get("ns/a")!;
  assert.equal("managedFields" in held.metadata, false);
  assert.ok(Object.isFrozen(held) && Object.isFrozen(held.metadata));
  assert.ok(
    Object.isFrozen(held.metadata.labels) &&
      Object.isFrozen((held as unknown as { data: object }).data),
  );
  assert.throws(() => {
    (held.metadata.labels as Record<string, string>).app = "db";
  }, TypeError);
  assert.equal(held.metadata.labels?.app, "web");

  const raw = standIn({ lists: [page("1", [obj()])] });
  await using asIs = informer(ConfigMap, { client: raw.client, transform: null }).start();
  await asIs.synced();
  const kept = asIs.get("ns/a")!;
  assert.deepEqual(kept.metadata.managedFields, [{ manager: "kubectl" }]);
  assert.ok(Object.isFrozen(kept.metadata.managedFields), "frozen all the same");
});

Deno.test("Informer: a throwing or rejecting handler does not stop the others or later events", async () => {
  const feed = new Feed();
  const fake = standIn({ lists: [page("1", [cm("a", "1")])], watches: [feed] });
  await using inf = informer(ConfigMap, { client: fake.client });
  const throwing: string[] = [];
  const rejecting: string[] = [];
  const calm: string[] = [];
  inf.onEvent((ev) => {
    throwing.push(show(ev));
    throw new Error("handler broke");
  });
  inf.onEvent((ev) => {
    rejecting.push(show(ev));
    return Promise.reject(new Error("async handler broke"));
  });
  inf.onEvent((ev) => void calm.push(show(ev)));
  inf.start();
  await until(() => inf.hasSynced, "the first list");
  await until(() => fake.watchCalls.length === 1, "the watch");
  feed.push({ type: "MODIFIED", object: cm("a", "2") });
  await until(() => calm.length === 2, "the modification");
  assert.deepEqual(calm, ["added a@1", "modified a@2<1"]);
  assert.deepEqual(throwing, calm);
  assert.deepEqual(rejecting, calm);
  assert.equal(inf.error, undefined, "the informer itself is fine");
});

/** A client whose first list answers only when the test says so; its watch never ends. */
function gatedClient() {
  let answer!: (list: ObjectList<CM>) => void;
  const listed = new Promise<ObjectList<CM>>((r) => answer = r);
  let lists = 0;
  const client = {
    list: () => (lists++ === 0 ? listed : new Promise(() => {})),
    watchEvents: () => new Feed().events(),
  } as unknown as WatchClient;
  return { client, answer, lists: () => lists };
}

Deno.test("Informer.synced: resolves only once the first list is applied", async () => {
  const gate = gatedClient();
  await using inf = informer(ConfigMap, { client: gate.client }).start();
  let synced = false;
  const waiting = inf.synced().then(() => synced = true);
  await until(() => gate.lists() === 1, "the list request");
  await settle();
  assert.equal(synced, false);
  assert.equal(inf.hasSynced, false);
  gate.answer(page("3", [cm("a", "3")]));
  await waiting;
  assert.equal(inf.hasSynced, true);
  assert.equal(inf.list().length, 1, "the list is applied when synced() resolves");
  await inf.synced(); // resolves at once from now on
});

Deno.test("Informer.synced: rejects when the informer is stopped first, and after", async () => {
  const gate = gatedClient();
  const inf = informer(ConfigMap, { client: gate.client }).start();
  const waiting = inf.synced();
  await until(() => gate.lists() === 1, "the list request");
  await inf.stop();
  await assert.rejects(waiting, /to sync: it was stopped/);
  await assert.rejects(inf.synced(), /to sync: it was stopped/);
  assert.throws(() => inf.start(), TypeError);
  // A stopped informer does not apply a list that arrives late.
  gate.answer(page("3", [cm("a", "3")]));
  await settle();
  assert.equal(inf.list().length, 0);
});

Deno.test("Informer.stop: closes the watch, tells each handler once, and no handler runs after", async () => {
  const feed = new Feed();
  const fake = standIn({ lists: [page("1", [cm("a", "1")])], watches: [feed] });
  const inf = new Informer(ConfigMap, { client: fake.client }).start();
  const events: string[] = [];
  let stopped = 0;
  let stoppedBeforeEvents = -1;
  inf.addHandler({
    onEvent: (ev) => void events.push(show(ev)),
    onStopped: () => {
      stopped++;
      stoppedBeforeEvents = events.length;
    },
  });
  let otherStopped = 0;
  inf.addHandler({ onStopped: () => void otherStopped++ });
  await inf.synced();
  await until(() => fake.watchCalls.length === 1, "the watch");
  feed.push({ type: "ADDED", object: cm("b", "2") });
  await until(() => events.length === 2, "the added event");

  const stopping = inf.stop();
  assert.equal(stopped, 0, "onStopped waits for the watch to close");
  await stopping;
  await inf.stop(); // a second stop does not tell them again
  assert.equal(stopped, 1);
  assert.equal(otherStopped, 1);
  assert.equal(stoppedBeforeEvents, 2);
  assert.ok(fake.watchCalls[0].options.signal?.aborted, "the watch request was aborted");

  feed.push({ type: "MODIFIED", object: cm("b", "3") }, { type: "DELETED", object: cm("a", "4") });
  await settle();
  assert.deepEqual(events, ["added a@1", "added b@2"]);
  assert.equal(inf.list().length, 2, "the store keeps its objects");
});

Deno.test("Informer resync: every resyncMs on the clock, each object again as modified with old === object", async () => {
  const clock = new FakeClock(1_000_000);
  const feed = new Feed();
  const fake = standIn({ lists: [page("1", [cm("a", "1"), cm("b", "1")])], watches: [feed] });
  const inf = informer(ConfigMap, { client: fake.client, clock, resyncMs: 60_000 }).start();
  const resyncs: [string, boolean][] = [];
  inf.onEvent((ev) => {
    if (ev.type === "modified") resyncs.push([ev.object.metadata.name!, ev.old === ev.object]);
  });
  await inf.synced();
  await until(() => fake.watchCalls.length === 1, "the watch");

  await clock.tickAsync(59_999);
  assert.deepEqual(resyncs, [], "not before resyncMs");
  await clock.tickAsync(1);
  assert.deepEqual(resyncs.sort(), [["a", true], ["b", true]]);
  await clock.tickAsync(60_000);
  assert.equal(resyncs.length, 4, "and again");
  assert.equal(fake.listCalls.length, 1, "a resync is not a relist");

  await inf.stop();
  await clock.tickAsync(120_000);
  assert.equal(resyncs.length, 4, "none after stop");
});
