// watch() as a whole, on a FakeClock with a stand-in client: backoff, reporting, persistent
// failures and shutdown (the state machine's paths are in _state_test.ts).
import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import { configureLogging, resetLogging } from "../../util/log.ts";
import {
  apiError,
  type CM,
  cm,
  ConfigMap,
  Feed,
  page,
  standIn,
} from "../../../tests/_watch_feed.ts";
import { watch, type WatchEvent } from "./watch.ts";
import { WatchError } from "./watch_error.ts";

/** Lets the stream run until it waits for the clock or a request. */
async function idle(): Promise<void> {
  for (let i = 0; i < 5; i++) await FakeClock.runMicrotasks();
}

async function captureLogs(): Promise<{ level: string; msg: string }[]> {
  const lines: { level: string; msg: string }[] = [];
  await configureLogging({
    level: "debug",
    format: "json",
    write: (l) => lines.push(JSON.parse(l)),
  });
  return lines;
}

Deno.test("watch() backs off with growing, jittered delays; reports a failure once and its recovery once", async () => {
  const logs = await captureLogs();
  try {
    const clock = new FakeClock(1_000_000);
    const unavailable = () => apiError(503, "list");
    const fake = standIn({ lists: [unavailable(), unavailable(), unavailable(), page("5", [])] });
    const ctl = new AbortController();
    const stream = watch(ConfigMap, {
      client: fake.client,
      namespace: "ns",
      clock,
      signal: ctl.signal,
      backoff: { initialMs: 100, maxMs: 1_000, jitter: 0.5 },
    });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.value?.type, "error");
    assert.equal((first.value as { error: WatchError }).error.code, 503);
    const after = it.next();
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      await idle();
      assert.equal(stream.stats.state, "backoff");
      assert.equal(clock.pending, 1, "only the backoff timer: no request is open");
      delays.push(clock.nextDue! - clock.now());
      await clock.tickAsync(delays.at(-1)!);
    }
    assert.equal((await after).value?.type, "relisted", "the same failure is not reported again");
    for (const [i, base] of [100, 200, 400].entries()) {
      assert.ok(delays[i] <= base && delays[i] >= base / 2, `delay ${i}: ${delays}`);
    }
    assert.equal(stream.stats.failures, 3);
    assert.equal(stream.stats.error, undefined);
    const kept = (level: string, text: string) =>
      logs.filter((l) => l.level === level && l.msg.includes(text)).length;
    assert.equal(kept("warn", "retrying with backoff, first in"), 1);
    assert.equal(kept("debug", "; retrying in"), 2);
    assert.equal(kept("info", "recovered after 3 failed attempts"), 1);
    ctl.abort();
    assert.equal((await it.next()).done, true);
  } finally {
    await resetLogging();
  }
});

Deno.test("watch() throws a persistent 403 as a WatchError that ends the stream", async () => {
  const fake = standIn({ lists: [apiError(403, "list")] });
  const stream = watch(ConfigMap, { client: fake.client, clock: new FakeClock() });
  const events: WatchEvent<CM>[] = [];
  const err = await (async () => {
    for await (const ev of stream) events.push(ev);
  })().then(() => undefined, (e) => e);
  assert.ok(err instanceof WatchError);
  assert.deepEqual([err.code, err.persistent], [403, true]);
  assert.deepEqual(events, []);
  assert.equal(stream.stats.state, "stopped");
  assert.equal(stream.stats.error, err);
});

Deno.test("watch() with retryPersistent yields a persistent 403 once as an error event and retries it", async () => {
  const clock = new FakeClock();
  const forbidden = () => apiError(403, "list");
  const fake = standIn({ lists: [forbidden(), forbidden(), page("5", [cm("a", "4")])] });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, {
    client: fake.client,
    clock,
    signal: ctl.signal,
    retryPersistent: true,
    backoff: { initialMs: 100, jitter: 0 },
  });
  const it = stream[Symbol.asyncIterator]();
  const first = await it.next();
  assert.equal(first.value?.type, "error");
  const next = it.next();
  await clock.tickAsync(100 + 200);
  assert.equal((await next).value?.type, "relisted");
  assert.equal(stream.stats.failures, 2);
  assert.equal(fake.listCalls.length, 3);
  ctl.abort();
  assert.equal((await it.next()).done, true);
});

Deno.test("watch() restarts a stalled watch from its last resourceVersion, without a relist", async () => {
  const clock = new FakeClock();
  const fake = standIn({
    lists: [page("5", [cm("a", "4")])],
    watches: [new Feed([{ type: "ADDED", object: cm("b", "6") }]), []],
  });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, {
    client: fake.client,
    clock,
    signal: ctl.signal,
    stallTimeoutMs: 1_000,
    backoff: { initialMs: 100, jitter: 0 },
  });
  const it = stream[Symbol.asyncIterator]();
  assert.equal((await it.next()).value?.type, "relisted");
  assert.equal((await it.next()).value?.type, "added");
  const stalled = it.next();
  await clock.tickAsync(1_000);
  const ev = (await stalled).value as WatchEvent<CM>;
  assert.ok(ev.type === "error" && ev.error.reason === "Stalled");
  const resumed = it.next();
  await clock.tickAsync(100);
  await idle();
  assert.equal(fake.watchCalls.length, 2);
  assert.equal(fake.watchCalls[1].options.resourceVersion, "6");
  assert.equal(fake.listCalls.length, 1);
  assert.deepEqual([stream.stats.stalls, stream.stats.maxOpenRequests], [1, 1]);
  ctl.abort();
  assert.equal((await resumed).done, true);
});

Deno.test("watch() ends without an error when aborted, closing the open watch or ending a backoff", async () => {
  const clock = new FakeClock();
  const fake = standIn({ lists: [page("5", [])] });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, { client: fake.client, clock, signal: ctl.signal });
  const it = stream[Symbol.asyncIterator]();
  assert.equal((await it.next()).value?.type, "relisted");
  const waiting = it.next();
  await idle();
  assert.equal(stream.stats.openRequests, 1);
  ctl.abort();
  assert.deepEqual(await waiting, { done: true, value: undefined });
  assert.equal(fake.watchCalls[0].options.signal?.aborted, true);
  assert.deepEqual([stream.stats.openRequests, stream.stats.state], [0, "stopped"]);
  assert.equal(clock.pending, 0, "no watchdog left behind");

  const ctl2 = new AbortController();
  const failing = watch(ConfigMap, {
    client: standIn({ lists: [apiError(503, "list")] }).client,
    clock,
    signal: ctl2.signal,
    backoff: { initialMs: 600_000, maxMs: 600_000, jitter: 0 },
  });
  const it2 = failing[Symbol.asyncIterator]();
  assert.equal((await it2.next()).value?.type, "error");
  const sleeping = it2.next();
  await idle();
  assert.equal(failing.stats.state, "backoff");
  ctl2.abort();
  assert.equal((await sleeping).done, true);
  assert.deepEqual([failing.stats.state, clock.pending], ["stopped", 0]);
});

Deno.test("watch() closes the open watch when the consumer leaves the loop", async () => {
  const fake = standIn({
    lists: [page("5", [])],
    watches: [[{ type: "ADDED", object: cm("a", "6") }]],
  });
  const stream = watch(ConfigMap, { client: fake.client, clock: new FakeClock() });
  for await (const ev of stream) if (ev.type === "added") break;
  assert.equal(fake.watchCalls[0].options.signal?.aborted, true);
  assert.deepEqual([stream.stats.openRequests, stream.stats.state], [0, "stopped"]);
  assert.throws(() => stream[Symbol.asyncIterator](), TypeError);
});
