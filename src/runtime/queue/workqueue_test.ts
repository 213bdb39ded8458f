import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import { exponentialRateLimiter } from "./rate_limiter.ts";
import { WorkQueue, type WorkQueueItem, type WorkQueueOptions } from "./workqueue.ts";

const flush = FakeClock.runMicrotasks;

function setup<K = string>(options: WorkQueueOptions<K> = {}) {
  const clock = new FakeClock();
  const queue = new WorkQueue<K>({ clock, ...options });
  return { clock, queue };
}

/** Tracks whether a promise has settled without awaiting it. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T } = { settled: false };
  promise.then((value) => Object.assign(state, { settled: true, value }));
  return state;
}

async function key<K>(queue: WorkQueue<K>): Promise<K> {
  const item = await queue.get();
  assert.equal(item.shutdown, false);
  return item.key as K;
}

/** Every key currently queued, in order, each marked done. */
async function takeAll<K>(queue: WorkQueue<K>): Promise<K[]> {
  const keys: K[] = [];
  while (queue.len() > 0) keys.push(await key(queue));
  for (const k of keys) queue.done(k);
  return keys;
}

Deno.test("WorkQueue de-duplicates keys that are waiting", async () => {
  const { queue } = setup();
  queue.add("a");
  queue.add("b");
  queue.add("a");
  queue.add("a");
  assert.equal(queue.len(), 2);
  assert.deepEqual(await takeAll(queue), ["a", "b"]);
  queue.add("a");
  assert.equal(queue.len(), 1, "a done key can be added again");
});

Deno.test("WorkQueue hands keys out in add order, also past internal compaction", async () => {
  const { queue } = setup<number>();
  const added: number[] = [];
  const got: number[] = [];
  for (let i = 0; i < 3_000; i++) queue.add(i), added.push(i);
  for (let i = 0; i < 2_000; i++) got.push(await key(queue));
  for (let i = 3_000; i < 5_000; i++) queue.add(i), added.push(i);
  got.push(...await takeAll(queue));
  assert.deepEqual(got, added);
});

Deno.test("WorkQueue get waits for a key and serves waiting workers in order", async () => {
  const { queue } = setup();
  const first = track(queue.get());
  const second = track(queue.get());
  await flush();
  assert.equal(first.settled, false);
  queue.add("a");
  await flush();
  assert.deepEqual(first.value, { key: "a", shutdown: false });
  assert.equal(second.settled, false);
  queue.add("a"); // being processed: not handed to the second worker
  queue.add("b");
  await flush();
  assert.deepEqual(second.value, { key: "b", shutdown: false });
  assert.equal(queue.len(), 0);
});

Deno.test("WorkQueue re-queues a key added while processing when it is done", async () => {
  const { queue } = setup();
  queue.add("a");
  queue.add("b");
  assert.equal(await key(queue), "a");
  queue.add("a");
  queue.add("a");
  assert.equal(queue.len(), 1, "a stays out of the queue while processed");
  const waiting = track(queue.get()); // takes b
  await flush();
  assert.equal(waiting.value?.key, "b");
  const next = track(queue.get());
  await flush();
  assert.equal(next.settled, false, "a is not handed out twice");
  queue.done("a");
  await flush();
  assert.deepEqual(next.value, { key: "a", shutdown: false });
  queue.done("a");
  queue.done("a"); // not processing: ignored
  queue.done("b");
  assert.equal(queue.len(), 0);
});

Deno.test("WorkQueue never lets two workers hold one key, and loses no add", async () => {
  const { clock, queue } = setup<number>();
  let seed = 42; // mulberry32: deterministic pseudo-random numbers
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const keys = 10;
  const active = new Map<number, number>();
  let seq = 0; // orders events that happen at the same fake time
  const lastAdd = new Map<number, number>(); // key -> seq of its last add
  const lastStart = new Map<number, number>(); // key -> seq when its last processing began
  let maxActive = 0;
  let processed = 0;
  const worker = async () => {
    for await (const k of queue) {
      const n = (active.get(k) ?? 0) + 1;
      active.set(k, n);
      maxActive = Math.max(maxActive, n);
      lastStart.set(k, ++seq);
      processed++;
      await clock.sleep(Math.floor(random() * 20));
      active.set(k, n - 1);
      queue.done(k);
    }
  };
  const workers = Array.from({ length: 25 }, worker);
  for (let step = 0; step < 400; step++) {
    for (let i = 0; i < 5; i++) {
      const k = Math.floor(random() * keys);
      lastAdd.set(k, ++seq);
      queue.add(k);
    }
    await clock.tickAsync(Math.floor(random() * 5));
  }
  const drained = queue.shutDownWithDrain();
  while (clock.pending > 0) await clock.nextAsync();
  await drained;
  await Promise.all(workers);
  assert.equal(maxActive, 1);
  assert.ok(processed >= 400, `expected many keys processed, got ${processed}`);
  assert.ok(processed < 2_000, `expected de-duplication, got ${processed} for 2000 adds`);
  for (const [k, added] of lastAdd) {
    assert.ok(lastStart.get(k)! > added, `key "${k}" added at ${added} was not processed after`);
  }
});

Deno.test("WorkQueue addAfter adds when the delay has passed, in due order", async () => {
  const { clock, queue } = setup();
  queue.addAfter("late", 30);
  queue.addAfter("early", 10);
  queue.addAfter("mid1", 20);
  queue.addAfter("mid2", 20);
  queue.addAfter("now", 0);
  queue.addAfter("past", -5);
  assert.deepEqual(await takeAll(queue), ["now", "past"]);
  clock.tick(9);
  assert.equal(queue.len(), 0);
  clock.tick(1);
  assert.deepEqual(await takeAll(queue), ["early"]);
  clock.tick(20);
  assert.deepEqual(await takeAll(queue), ["mid1", "mid2", "late"]);
  assert.equal(clock.pending, 0, "no timer is left behind");
});

Deno.test("WorkQueue addAfter keeps the earlier time for a key", async () => {
  const { clock, queue } = setup();
  queue.addAfter("a", 50);
  queue.addAfter("a", 10);
  queue.addAfter("b", 10);
  queue.addAfter("b", 50);
  clock.tick(10);
  assert.deepEqual(await takeAll(queue), ["a", "b"]);
  clock.tick(100);
  assert.equal(queue.len(), 0, "the superseded times add nothing");
  assert.equal(clock.pending, 0);
});

Deno.test("WorkQueue addAfter of a waiting key de-duplicates", async () => {
  const { clock, queue } = setup();
  queue.add("a");
  queue.addAfter("a", 5);
  clock.tick(5);
  assert.deepEqual(await takeAll(queue), ["a"]);
  assert.throws(() => queue.addAfter("a", NaN), RangeError);
  assert.throws(() => queue.addAfter("a", Infinity), /"Infinity"/);
});

Deno.test("WorkQueue addRateLimited backs off per key until forget", async () => {
  const { clock, queue } = setup({ rateLimiter: exponentialRateLimiter({ baseDelayMs: 5 }) });
  const retryAfter = async (expectedMs: number) => {
    queue.addRateLimited("a");
    clock.tick(expectedMs - 1);
    assert.equal(queue.len(), 0, `not before ${expectedMs} ms`);
    clock.tick(1);
    assert.deepEqual(await takeAll(queue), ["a"]);
  };
  await retryAfter(5);
  await retryAfter(10);
  await retryAfter(20);
  assert.equal(queue.numRequeues("a"), 3);
  queue.forget("a");
  assert.equal(queue.numRequeues("a"), 0);
  await retryAfter(5);
});

Deno.test("WorkQueue shutDown resolves waiting workers and ignores later adds", async () => {
  const { clock, queue } = setup();
  const waiting = [track(queue.get()), track(queue.get())];
  queue.addAfter("delayed", 10);
  queue.shutDown();
  queue.shutDown();
  await flush();
  assert.ok(queue.shuttingDown);
  for (const w of waiting) assert.deepEqual(w.value, { key: undefined, shutdown: true });
  assert.equal(clock.pending, 0, "delayed adds are dropped");
  queue.add("a");
  queue.addAfter("b", 1);
  queue.addRateLimited("c");
  clock.tick(1_000);
  assert.equal(queue.len(), 0);
  assert.equal(queue.numRequeues("c"), 0);
  assert.deepEqual(await queue.get(), { key: undefined, shutdown: true });
});

Deno.test("WorkQueue shutDown still hands out keys queued before it", async () => {
  const { queue } = setup();
  queue.add("a");
  queue.add("b");
  queue.shutDown();
  assert.deepEqual(await takeAll(queue), ["a", "b"]);
  assert.equal((await queue.get()).shutdown, true);
});

Deno.test("WorkQueue shutDownWithDrain waits for in-flight keys to be done", async () => {
  const { queue } = setup();
  queue.add("a");
  queue.add("b");
  const a = await key(queue);
  const b = await key(queue);
  queue.add("a"); // dirty while processing, before shutdown
  const drained = track(queue.shutDownWithDrain());
  queue.add("c");
  await flush();
  assert.equal(drained.settled, false);
  queue.done(a);
  await flush();
  assert.equal(drained.settled, false, "b is still in flight");
  assert.equal(queue.len(), 1, "the add from before shutdown is kept");
  queue.done(b);
  await flush();
  assert.equal(drained.settled, true);
  assert.deepEqual(await takeAll(queue), ["a"]);
  await queue.shutDownWithDrain(); // nothing in flight: resolves at once
});

Deno.test("WorkQueue is AsyncDisposable with a drain", async () => {
  const clock = new FakeClock();
  let outer: WorkQueue | undefined;
  let finished = false;
  {
    await using queue = new WorkQueue({ clock });
    outer = queue;
    queue.add("a");
    const k = await key(queue);
    (async () => {
      await flush(); // runs only after the block's end has started the drain
      finished = true;
      queue.done(k);
    })();
  }
  assert.ok(finished);
  assert.ok(outer.shuttingDown);
});

Deno.test("WorkQueue get stops waiting when its signal aborts", async () => {
  const { queue } = setup();
  const controller = new AbortController();
  const aborted = queue.get({ signal: controller.signal });
  const other = track(queue.get());
  controller.abort(new Error("Stop"));
  await assert.rejects(aborted, { message: "Stop" });
  queue.add("a");
  await flush();
  assert.equal(other.value?.key, "a", "the aborted getter is skipped");
  await assert.rejects(queue.get({ signal: controller.signal }), { message: "Stop" });
});

Deno.test("WorkQueue async iteration ends at shutdown", async () => {
  const { queue } = setup();
  const seen: string[] = [];
  const loop = (async () => {
    for await (const k of queue) {
      seen.push(k);
      queue.done(k);
    }
  })();
  queue.add("a");
  await flush();
  queue.add("b");
  queue.shutDown();
  await loop;
  assert.deepEqual(seen, ["a", "b"]);
});

Deno.test("WorkQueue reports metrics through hooks", async () => {
  const events: string[] = [];
  const { clock, queue } = setup({
    unfinishedWorkPeriodMs: 100,
    metrics: {
      add: (k) => events.push(`add ${k}`),
      depth: (n) => events.push(`depth ${n}`),
      queueDuration: (s, k) => events.push(`queue ${k} ${s}`),
      workDuration: (s, k) => events.push(`work ${k} ${s}`),
      retry: (k) => events.push(`retry ${k}`),
      unfinishedWork: (u, l) => events.push(`unfinished ${u} ${l}`),
    },
  });
  queue.add("a");
  queue.add("a");
  queue.addAfter("b", 50);
  clock.tick(50);
  clock.tick(250);
  const a = await key(queue);
  clock.tick(100);
  const b = await key(queue);
  clock.tick(150);
  queue.done(a);
  clock.tick(50);
  queue.done(b);
  clock.tick(1_000);
  assert.deepEqual(events, [
    "add a",
    "depth 1",
    "retry b",
    "add b",
    "depth 2",
    "depth 1",
    "queue a 0.3",
    "unfinished 0.1 0.1",
    "depth 0",
    "queue b 0.35",
    "unfinished 0.3 0.2",
    "work a 0.25",
    "unfinished 0.2 0.2",
    "work b 0.2",
    "unfinished 0 0",
  ]);
  assert.equal(clock.pending, 0, "no timer while idle");
  const item: WorkQueueItem<string> = await (queue.shutDown(), queue.get());
  assert.equal(item.shutdown, true);
});

Deno.test("WorkQueue rejects a bad unfinished-work period", () => {
  assert.throws(() => new WorkQueue({ unfinishedWorkPeriodMs: 0 }), RangeError);
});
