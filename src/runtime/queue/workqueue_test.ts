import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import { exponentialRateLimiter } from "./rate_limiter.ts";
import {
  DEFAULT_PRIORITY,
  LOW_PRIORITY,
  WorkQueue,
  type WorkQueueItem,
  type WorkQueueOptions,
} from "./workqueue.ts";

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

// --- Priorities -----------------------------------------------------------------------

Deno.test("WorkQueue priorities: highest first, FIFO within one", async () => {
  const { queue } = setup();
  queue.add("low1", { priority: LOW_PRIORITY });
  queue.add("mid1");
  queue.add("high1", { priority: 10 });
  queue.add("low2", { priority: LOW_PRIORITY });
  queue.add("mid2", { priority: DEFAULT_PRIORITY });
  queue.add("high2", { priority: 10 });
  queue.add("frac", { priority: 0.5 });
  const order = ["high1", "high2", "frac", "mid1", "mid2", "low1", "low2"];
  assert.deepEqual(queue.waiting(), order, "waiting() is the hand-out order");
  assert.equal(queue.len(), 7);
  assert.deepEqual(await takeAll(queue), order);
  assert.equal(queue.len(), 0);
});

Deno.test("WorkQueue priorities: a waiting key keeps the higher priority; a rise moves it to the back", async () => {
  const { queue } = setup();
  queue.add("a");
  queue.add("b");
  queue.add("c");
  queue.add("a", { priority: LOW_PRIORITY }); // lower: a keeps 0 and its place
  assert.deepEqual(queue.waiting(), ["a", "b", "c"]);
  queue.add("x", { priority: 5 });
  queue.add("b", { priority: 5 }); // higher: b moves behind x at 5
  assert.deepEqual(queue.waiting(), ["x", "b", "a", "c"]);
  queue.add("b", { priority: 5 }); // same: keeps its place
  queue.add("x"); // lower: keeps 5
  assert.deepEqual(queue.waiting(), ["x", "b", "a", "c"]);
  assert.equal(queue.len(), 4);
  assert.deepEqual(await takeAll(queue), ["x", "b", "a", "c"]);
});

Deno.test("WorkQueue priorities: many rises and 10,000 keys keep order and length", async () => {
  const { queue } = setup<number>();
  const n = 10_000;
  for (let i = 0; i < n; i++) queue.add(i, { priority: LOW_PRIORITY });
  // Three keys in four rise to 0, in descending order (past the low FIFO's compaction of
  // the slots they leave); multiples of 4 stay low.
  for (let i = n - 1; i >= 0; i--) if (i % 4) queue.add(i);
  assert.equal(queue.len(), n);
  const keys = Array.from({ length: n }, (_, i) => n - 1 - i);
  const risen = keys.filter((i) => i % 4);
  const low = keys.filter((i) => i % 4 === 0).reverse();
  assert.deepEqual(queue.waiting(), [...risen, ...low]);
  const got: number[] = [];
  for (let i = 0; i < 100; i++) got.push(await key(queue));
  queue.add(-1, { priority: LOW_PRIORITY }); // behind every low key already waiting
  got.push(...await takeAll(queue));
  assert.deepEqual(got, [...risen, ...low, -1]);
});

Deno.test("WorkQueue priorities: a key re-added while processed is queued on done at the highest priority asked meanwhile", async () => {
  const { queue } = setup();
  queue.add("a", { priority: 10 });
  assert.equal(await key(queue), "a");
  queue.add("a", { priority: LOW_PRIORITY }); // not the 10 it was handed out with
  queue.add("b");
  queue.add("a", { priority: -5 });
  assert.deepEqual(queue.waiting(), ["b"], "a waits for done");
  queue.done("a");
  queue.add("c", { priority: -5 }); // after a at -5
  assert.deepEqual(queue.waiting(), ["b", "a", "c"]);
  queue.add("a", { priority: 1 }); // queued again: a rise moves it up
  assert.deepEqual(await takeAll(queue), ["a", "b", "c"]);
});

Deno.test("WorkQueue priorities: delayed adds enter with their priority; earlier time and higher priority win", async () => {
  const { clock, queue } = setup();
  queue.add("now-low", { priority: LOW_PRIORITY });
  queue.addAfter("a", 20, { priority: 1 });
  queue.addAfter("a", 10); // earlier: 10 ms, keeps priority 1
  queue.addAfter("b", 10, { priority: LOW_PRIORITY });
  queue.addAfter("b", 30, { priority: 7 }); // later: keeps 10 ms, priority rises to 7
  queue.addAfter("c", 10);
  queue.addAfter("d", 0, { priority: 3 }); // at once
  assert.deepEqual(queue.waiting(), ["d", "now-low"]);
  clock.tick(9);
  assert.equal(queue.len(), 2);
  clock.tick(1);
  assert.deepEqual(queue.waiting(), ["b", "d", "a", "c", "now-low"]);
  clock.tick(100);
  assert.equal(queue.len(), 5, "the superseded times add nothing");
  assert.deepEqual(await takeAll(queue), ["b", "d", "a", "c", "now-low"]);
  assert.equal(clock.pending, 0);
  assert.throws(
    () => queue.addAfter("a", 5, { priority: NaN }),
    /priority must be a finite number, got "NaN"/,
  );
  assert.throws(() => queue.add("a", { priority: Infinity }), RangeError);
  assert.throws(() => queue.addRateLimited("a", { priority: -Infinity }), RangeError);
  assert.equal(queue.numRequeues("a"), 0, "a rejected retry is not counted");
});

Deno.test("WorkQueue priorities: a delayed add neither raises nor is absorbed by the queued key", async () => {
  const { clock, queue } = setup();
  queue.add("a", { priority: LOW_PRIORITY });
  queue.add("b", { priority: LOW_PRIORITY });
  queue.addAfter("b", 10, { priority: 5 });
  assert.deepEqual(queue.waiting(), ["a", "b"], "b's delayed priority applies once due");
  clock.tick(10);
  assert.deepEqual(queue.waiting(), ["b", "a"]);
  assert.deepEqual(await takeAll(queue), ["b", "a"]);
});

Deno.test("WorkQueue priorities: addRateLimited retries at its priority", async () => {
  const { clock, queue } = setup({ rateLimiter: exponentialRateLimiter({ baseDelayMs: 5 }) });
  queue.add("x");
  queue.addRateLimited("a", { priority: 2 });
  queue.addRateLimited("b", { priority: LOW_PRIORITY });
  queue.addRateLimited("c");
  clock.tick(4);
  assert.deepEqual(queue.waiting(), ["x"]);
  clock.tick(1);
  assert.deepEqual(await takeAll(queue), ["a", "x", "c", "b"]);
  assert.equal(queue.numRequeues("a"), 1);
});

Deno.test("WorkQueue priorities: off, every key is at one priority (FIFO)", async () => {
  const events: string[] = [];
  const { clock, queue } = setup({
    priorities: false,
    metrics: {
      add: (k, p) => events.push(`add ${k} ${p}`),
      depth: (n, p) => events.push(`depth ${n} ${p}`),
    },
  });
  queue.add("a", { priority: LOW_PRIORITY });
  queue.add("b", { priority: 10 });
  queue.add("a", { priority: 100 }); // de-duplicated, no move
  queue.addAfter("c", 5, { priority: 50 });
  queue.add("d");
  clock.tick(5);
  assert.deepEqual(queue.waiting(), ["a", "b", "d", "c"]);
  assert.deepEqual(await takeAll(queue), ["a", "b", "d", "c"]);
  assert.throws(() => queue.add("a", { priority: NaN }), RangeError, "still checked");
  assert.deepEqual(events, [
    "add a 0",
    "depth 1 0",
    "add b 0",
    "depth 2 0",
    "add d 0",
    "depth 3 0",
    "add c 0",
    "depth 4 0",
    "depth 3 0",
    "depth 2 0",
    "depth 1 0",
    "depth 0 0",
  ]);
});

Deno.test("WorkQueue priorities: shutdown still hands out queued keys in priority order, then drains", async () => {
  const { clock, queue } = setup();
  queue.add("low", { priority: LOW_PRIORITY });
  queue.add("mid");
  assert.equal(await key(queue), "mid");
  queue.add("high", { priority: 9 });
  queue.addAfter("later", 5, { priority: 100 });
  const drained = track(queue.shutDownWithDrain());
  queue.add("ignored", { priority: 1_000 });
  clock.tick(5);
  assert.deepEqual(queue.waiting(), ["high", "low"], "delayed dropped, later adds ignored");
  assert.equal(await key(queue), "high");
  assert.equal(await key(queue), "low");
  assert.deepEqual(await queue.get(), { key: undefined, shutdown: true });
  queue.done("mid");
  queue.done("high");
  await flush();
  assert.equal(drained.settled, false, "low is still in flight");
  queue.done("low");
  await flush();
  assert.equal(drained.settled, true);
});

Deno.test("WorkQueue priorities: metrics report depth per priority", async () => {
  const events: string[] = [];
  const depths = new Map<number | undefined, number>();
  const { clock, queue } = setup({
    metrics: {
      add: (k, p) => events.push(`add ${k} ${p}`),
      depth: (n, p) => {
        events.push(`depth ${n} ${p}`);
        depths.set(p, n);
      },
      queueDuration: (s, k) => events.push(`queue ${k} ${s}`),
    },
  });
  queue.add("a", { priority: LOW_PRIORITY });
  queue.add("b", { priority: LOW_PRIORITY });
  queue.add("c");
  queue.add("a"); // rises: depth moves, no add
  queue.add("a"); // no change: nothing
  clock.tick(10);
  assert.equal(await key(queue), "c");
  queue.add("c", { priority: 3 }); // while processing: counted at 3
  queue.add("c", { priority: 4 }); // rises while processing: moves to 4
  queue.addAfter("d", 5, { priority: 2 });
  clock.tick(5);
  assert.deepEqual(events, [
    "add a -100",
    "depth 1 -100",
    "add b -100",
    "depth 2 -100",
    "add c 0",
    "depth 1 0",
    "depth 1 -100",
    "depth 2 0",
    "depth 1 0",
    "queue c 0.01",
    "add c 3",
    "depth 1 3",
    "depth 0 3",
    "depth 1 4",
    "add d 2",
    "depth 1 2",
  ]);
  assert.deepEqual(
    [...depths].filter(([, n]) => n > 0).sort(([p], [q]) => p! - q!),
    [[-100, 1], [0, 1], [2, 1], [4, 1]],
    "b low, a at 0, d at 2, c (in flight) at 4",
  );
  queue.done("c");
  assert.deepEqual(await takeAll(queue), ["c", "d", "a", "b"]);
  assert.deepEqual([...depths.values()].filter((n) => n !== 0), [], "every priority back to 0");
});

Deno.test("WorkQueue minPriority: a worker kept for changes waits past low keys and takes a change at once", async () => {
  const { queue } = setup();
  queue.add("storm-1", { priority: LOW_PRIORITY });
  queue.add("storm-2", { priority: LOW_PRIORITY });
  const kept = track(queue.get({ minPriority: DEFAULT_PRIORITY }));
  await flush();
  assert.equal(kept.settled, false, "took a low key");
  assert.equal(queue.len(), 2, "the low keys stay for other workers");
  // Another worker, taking any key, gets the storm in order.
  assert.equal(await key(queue), "storm-1");
  queue.add("edit");
  await flush();
  assert.deepEqual(kept.value, { key: "edit", shutdown: false });
  assert.deepEqual(queue.waiting(), ["storm-2"]);
});

Deno.test("WorkQueue minPriority: a queued low key raised to a change goes to the waiting worker", async () => {
  const depths = new Map<number | undefined, number>();
  const { queue } = setup({ metrics: { depth: (n, p) => depths.set(p, n) } });
  queue.add("a", { priority: LOW_PRIORITY });
  queue.add("b", { priority: LOW_PRIORITY });
  const kept = track(queue.get({ minPriority: DEFAULT_PRIORITY }));
  await flush();
  queue.add("b"); // b changed: rises to 0
  await flush();
  assert.deepEqual(kept.value, { key: "b", shutdown: false });
  assert.deepEqual(queue.waiting(), ["a"]);
  assert.deepEqual(Object.fromEntries(depths), { [LOW_PRIORITY]: 1, [DEFAULT_PRIORITY]: 0 });
});

Deno.test("WorkQueue minPriority: a key is handed to the first waiting worker that takes it", async () => {
  const { queue } = setup();
  const kept = track(queue.get({ minPriority: DEFAULT_PRIORITY }));
  const any = track(queue.get());
  queue.add("low", { priority: LOW_PRIORITY });
  await flush();
  assert.equal(kept.settled, false);
  assert.deepEqual(any.value, { key: "low", shutdown: false }, "skipped the kept worker");
  queue.add("high", { priority: 5 });
  await flush();
  assert.deepEqual(kept.value, { key: "high", shutdown: false });
});

Deno.test("WorkQueue minPriority: at shutdown a kept worker stops while low keys go to the others", async () => {
  const { queue } = setup();
  queue.add("low", { priority: LOW_PRIORITY });
  const kept = track(queue.get({ minPriority: DEFAULT_PRIORITY }));
  queue.shutDown();
  await flush();
  assert.deepEqual(kept.value, { key: undefined, shutdown: true });
  assert.equal(await key(queue), "low", "still handed out");
  assert.throws(() => queue.get({ minPriority: NaN }), RangeError);
});
