import assert from "node:assert/strict";
import { FakeClock } from "../../../testing/fake_clock.ts";
import { requeue } from "../reconcile.ts";
import { boundedAttempt } from "./_attempt.ts";

const never = () => new Promise<undefined>(() => {});

Deno.test("boundedAttempt without a bound: the runner's signal, what the attempt did", async () => {
  const clock = new FakeClock();
  const shutdown = new AbortController();
  const a = boundedAttempt({ key: "ns/a", timeoutMs: undefined, clock, signal: shutdown.signal });
  assert.equal(a.signal, shutdown.signal);
  assert.deepEqual(await a.run(() => requeue(5)), { ok: true, result: requeue(5) });
  const boom = new Error("boom");
  assert.deepEqual(await a.run(() => Promise.reject(boom)), { ok: false, error: boom });
  assert.deepEqual(
    await a.run(() => {
      throw boom;
    }),
    { ok: false, error: boom },
  );
  assert.equal(clock.pending, 0);
  assert.ok(!a.timedOut);
});

Deno.test("boundedAttempt cuts a hung attempt at its bound and aborts its signal", async () => {
  const clock = new FakeClock();
  const a = boundedAttempt({
    key: "ns/hang",
    timeoutMs: 1_000,
    clock,
    signal: new AbortController().signal,
  });
  let ended = false;
  const run = a.run(never).then((s) => (ended = true, s));
  await clock.tickAsync(999);
  assert.ok(!ended && !a.signal.aborted && !a.timedOut);
  await clock.tickAsync(1);
  assert.ok(ended, "the runner still waits for the hung attempt");
  const settled = await run;
  assert.ok(a.timedOut);
  assert.ok(!settled.ok);
  const err = settled.error as DOMException;
  assert.equal(err.name, "TimeoutError");
  assert.ok(err instanceof Error);
  assert.equal(err.message, 'Reconcile of "ns/hang" timed out after 1000 ms');
  assert.ok(a.signal.aborted);
  assert.equal(a.signal.reason, err, "ctx.signal aborts with the same reason");
  assert.throws(() => a.signal.throwIfAborted(), err);
});

Deno.test("boundedAttempt: an attempt that ends on the abort with its own error is a timeout", async () => {
  const clock = new FakeClock();
  const a = boundedAttempt({
    key: "a",
    timeoutMs: 10,
    clock,
    signal: new AbortController().signal,
  });
  const run = a.run(() =>
    new Promise((_, reject) => {
      // As a fetch does: rejects at once, in the abort's own dispatch.
      a.signal.addEventListener("abort", () => reject(new Error("request cancelled")));
    })
  );
  await clock.tickAsync(10);
  const settled = await run;
  assert.ok(a.timedOut);
  assert.equal(!settled.ok && (settled.error as Error).name, "TimeoutError");
});

Deno.test("boundedAttempt: an attempt within its bound is untouched and its timer gone", async () => {
  const clock = new FakeClock();
  const a = boundedAttempt({
    key: "a",
    timeoutMs: 10,
    clock,
    signal: new AbortController().signal,
  });
  const run = a.run(async () => {
    await clock.sleep(9);
    return requeue(1);
  });
  await clock.tickAsync(9);
  assert.deepEqual(await run, { ok: true, result: requeue(1) });
  assert.equal(clock.pending, 0, "the bound's timer was cleared");
  await clock.tickAsync(100);
  assert.ok(!a.signal.aborted && !a.timedOut);
});

Deno.test("boundedAttempt: the attempt's signal aborts with the runner's at shutdown", async () => {
  const clock = new FakeClock();
  const shutdown = new AbortController();
  const a = boundedAttempt({ key: "a", timeoutMs: 10_000, clock, signal: shutdown.signal });
  const run = a.run(() =>
    new Promise((_, reject) => a.signal.addEventListener("abort", () => reject(a.signal.reason)))
  );
  const reason = new Error("Controller shutdown timed out");
  shutdown.abort(reason);
  assert.equal(a.signal.reason, reason);
  assert.deepEqual(await run, { ok: false, error: reason });
  assert.ok(!a.timedOut, "not a timeout");
  assert.equal(clock.pending, 0);
});
