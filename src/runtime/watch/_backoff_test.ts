import assert from "node:assert/strict";
import { Backoff } from "./_backoff.ts";
import { FakeClock } from "../../testing/fake_clock.ts";

Deno.test("Backoff grows by its factor up to maxMs, and restarts after a healthy period", () => {
  const clock = new FakeClock(1_000_000);
  const b = new Backoff({ initialMs: 100, maxMs: 1_000, jitter: 0, resetAfterMs: 10_000 }, clock);
  const delays: number[] = [];
  for (let i = 0; i < 7; i++) {
    const d = b.next();
    delays.push(d);
    clock.tick(d);
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1_000, 1_000, 1_000]);
  assert.equal(b.failures, 7);
  clock.tick(10_001); // no failure for longer than resetAfterMs
  assert.equal(b.next(), 100);
  assert.equal(b.next(), 200);
  b.reset();
  assert.equal(b.failures, 0);
  assert.equal(b.next(), 100);
});

Deno.test("Backoff jitter only shortens a delay, by at most the jitter fraction", () => {
  const clock = new FakeClock();
  const at = (r: number) => new Backoff({ initialMs: 1_000, jitter: 0.5 }, clock, () => r).next();
  assert.equal(at(0), 1_000);
  assert.equal(at(0.5), 750);
  assert.equal(at(0.999), 500);
  const defaults = new Backoff({}, clock, () => 0);
  const first = [defaults.next(), defaults.next(), defaults.next()];
  assert.deepEqual(first, [800, 1_600, 3_200]);
  for (let i = 0; i < 10; i++) assert.ok(defaults.next() <= 30_000);
});

Deno.test("Backoff rejects options that cannot make a schedule", () => {
  const clock = new FakeClock();
  assert.throws(() => new Backoff({ initialMs: 0 }, clock), RangeError);
  assert.throws(() => new Backoff({ initialMs: 100, maxMs: 50 }, clock), RangeError);
  assert.throws(() => new Backoff({ factor: 0.5 }, clock), RangeError);
  assert.throws(() => new Backoff({ jitter: 1 }, clock), /jitter must be in \[0, 1\), got "1"/);
});
