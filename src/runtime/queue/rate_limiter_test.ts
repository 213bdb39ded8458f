import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import {
  bucketRateLimiter,
  defaultControllerRateLimiter,
  exponentialRateLimiter,
  maxOfRateLimiter,
  type RateLimiter,
} from "./rate_limiter.ts";

const times = <K>(limiter: RateLimiter<K>, key: K, n: number) =>
  Array.from({ length: n }, () => limiter.when(key));

Deno.test("exponentialRateLimiter doubles from 5 ms and caps at 1000 s", () => {
  const limiter = exponentialRateLimiter<string>();
  const delays = times(limiter, "a", 20);
  assert.deepEqual(delays.slice(0, 8), [5, 10, 20, 40, 80, 160, 320, 640]);
  // 5 * 2^17 = 655,360 ms is the last below the cap; 5 * 2^18 would exceed it.
  assert.equal(delays[17], 655_360);
  assert.deepEqual(delays.slice(18), [1_000_000, 1_000_000]);
  assert.equal(limiter.numRequeues("a"), 20);
});

Deno.test("exponentialRateLimiter stays at the cap after very many failures", () => {
  const limiter = exponentialRateLimiter<string>({ baseDelayMs: 1, maxDelayMs: 1_000 });
  const delays = times(limiter, "a", 2_000);
  assert.deepEqual(delays.slice(0, 11), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1_000]);
  assert.ok(delays.slice(10).every((d) => d === 1_000));
});

Deno.test("exponentialRateLimiter tracks keys separately and forget resets one", () => {
  const limiter = exponentialRateLimiter<string>();
  times(limiter, "a", 3);
  assert.equal(limiter.when("b"), 5);
  assert.equal(limiter.numRequeues("a"), 3);
  assert.equal(limiter.numRequeues("b"), 1);
  limiter.forget("a");
  assert.equal(limiter.numRequeues("a"), 0);
  assert.equal(limiter.numRequeues("b"), 1);
  assert.deepEqual(times(limiter, "a", 2), [5, 10]);
  assert.equal(limiter.when("b"), 10);
});

Deno.test("exponentialRateLimiter with zero base delay never waits", () => {
  const limiter = exponentialRateLimiter<string>({ baseDelayMs: 0, maxDelayMs: 10 });
  assert.ok(times(limiter, "a", 1_100).every((d) => d === 0));
});

Deno.test("exponentialRateLimiter rejects bad delays", () => {
  assert.throws(() => exponentialRateLimiter({ baseDelayMs: -1 }), RangeError);
  assert.throws(() => exponentialRateLimiter({ maxDelayMs: NaN }), RangeError);
  assert.throws(() => exponentialRateLimiter({ maxDelayMs: Infinity }), RangeError);
  assert.throws(() => exponentialRateLimiter({ baseDelayMs: 10, maxDelayMs: 5 }), /"10"/);
});

Deno.test("bucketRateLimiter allows a burst, then queues reservations 1/qps apart", () => {
  const clock = new FakeClock();
  const limiter = bucketRateLimiter<number>({ qps: 10, burst: 100, clock });
  const delays = Array.from({ length: 103 }, (_, i) => limiter.when(i));
  assert.ok(delays.slice(0, 100).every((d) => d === 0));
  assert.deepEqual(delays.slice(100), [100, 200, 300]);
  assert.equal(limiter.numRequeues(0), 0);
});

Deno.test("bucketRateLimiter refills with time and repays debt first", () => {
  const clock = new FakeClock();
  const limiter = bucketRateLimiter<string>({ qps: 10, burst: 5, clock });
  assert.deepEqual(times(limiter, "k", 7), [0, 0, 0, 0, 0, 100, 200]);
  // A debt of 2 tokens; half a second adds 5, leaving 3.
  clock.tick(500);
  assert.deepEqual(times(limiter, "k", 4), [0, 0, 0, 100]);
  clock.tick(50);
  // Half a token repaid: the bucket holds -0.5, so the next waits 150 ms.
  assert.equal(limiter.when("k"), 150);
});

Deno.test("bucketRateLimiter never holds more than burst tokens", () => {
  const clock = new FakeClock();
  const limiter = bucketRateLimiter<string>({ qps: 100, burst: 3, clock });
  times(limiter, "k", 3);
  clock.tick(3_600_000);
  assert.deepEqual(times(limiter, "k", 5), [0, 0, 0, 10, 20]);
});

Deno.test("bucketRateLimiter forget does not refill", () => {
  const clock = new FakeClock();
  const limiter = bucketRateLimiter<string>({ qps: 1, burst: 1, clock });
  assert.equal(limiter.when("a"), 0);
  limiter.forget("a");
  assert.equal(limiter.when("a"), 1_000);
});

Deno.test("bucketRateLimiter with infinite qps never waits", () => {
  const limiter = bucketRateLimiter<string>({ qps: Infinity, burst: 1, clock: new FakeClock() });
  assert.ok(times(limiter, "a", 1_000).every((d) => d === 0));
});

Deno.test("bucketRateLimiter rejects bad options", () => {
  assert.throws(() => bucketRateLimiter({ qps: 0 }), RangeError);
  assert.throws(() => bucketRateLimiter({ qps: NaN }), RangeError);
  assert.throws(() => bucketRateLimiter({ burst: 0 }), RangeError);
  assert.throws(() => bucketRateLimiter({ burst: 1.5 }), /"1.5"/);
});

Deno.test("maxOfRateLimiter returns the worst delay and count, forgets in all", () => {
  const calls: string[] = [];
  const fixed = (name: string, delay: number, count: number): RateLimiter<string> => ({
    when: (key) => (calls.push(`${name}.when(${key})`), delay),
    forget: (key) => void calls.push(`${name}.forget(${key})`),
    numRequeues: () => count,
  });
  const limiter = maxOfRateLimiter(fixed("a", 30, 1), fixed("b", 70, 4), fixed("c", 10, 2));
  assert.equal(limiter.when("k"), 70);
  assert.equal(limiter.numRequeues("k"), 4);
  limiter.forget("k");
  assert.deepEqual(calls, [
    "a.when(k)",
    "b.when(k)",
    "c.when(k)",
    "a.forget(k)",
    "b.forget(k)",
    "c.forget(k)",
  ]);
  assert.throws(() => maxOfRateLimiter(), TypeError);
});

Deno.test("defaultControllerRateLimiter combines per-key backoff with a 10 qps, 100 burst bucket", () => {
  const clock = new FakeClock();
  const limiter = defaultControllerRateLimiter<string>({ clock });
  // 100 distinct keys fail once: each waits its own 5 ms, the bucket is now empty.
  for (let i = 0; i < 100; i++) assert.equal(limiter.when(`k${i}`), 5);
  assert.equal(limiter.when("k100"), 100);
  assert.equal(limiter.when("k101"), 200);
  // Per-key backoff still dominates once it is longer than the bucket's wait.
  clock.tick(60_000);
  assert.deepEqual(times(limiter, "k0", 5), [10, 20, 40, 80, 160]);
  assert.equal(limiter.numRequeues("k0"), 6);
  limiter.forget("k0");
  assert.equal(limiter.numRequeues("k0"), 0);
  assert.equal(limiter.when("k0"), 5);
});
