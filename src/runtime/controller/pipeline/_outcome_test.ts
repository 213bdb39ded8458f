import assert from "node:assert/strict";
import { FakeClock } from "../../../testing/fake_clock.ts";
import { WorkQueue } from "../../queue/workqueue.ts";
import type { Cause, ReconcileSample } from "../metrics_hooks.ts";
import { requeue, TerminalError } from "../reconcile.ts";
import { outcomeOf, type OutcomeTarget, settle } from "./_outcome.ts";

/** A queue on fake time, and what the outcome reported. */
function setup() {
  const clock = new FakeClock();
  const queue = new WorkQueue<string>({ clock });
  const queued: Cause[] = [];
  const samples: ReconcileSample[] = [];
  const logs: { level: string; message: string; props: Record<string, unknown> }[] = [];
  const events: string[] = [];
  const target: OutcomeTarget = {
    controller: "c",
    queue,
    metrics: {
      queued: (_c, cause) => queued.push(cause),
      reconcile: (s) => samples.push(s),
    },
    log: {
      warn: (message: string, props?: Record<string, unknown>) =>
        void logs.push({ level: "warn", message, props: props ?? {} }),
      error: (message: string, props?: Record<string, unknown>) =>
        void logs.push({ level: "error", message, props: props ?? {} }),
    } as OutcomeTarget["log"],
    warn: (reason, message) => void events.push(`${reason}: ${message}`),
  };
  return { clock, queue, queued, samples, logs, events, target };
}

Deno.test("outcomeOf labels every way a reconcile can settle", () => {
  assert.equal(outcomeOf({ ok: true, result: undefined }), "success");
  assert.equal(outcomeOf({ ok: true, result: requeue(0) }), "requeue");
  assert.equal(outcomeOf({ ok: true, result: requeue(1) }), "requeue_after");
  assert.equal(outcomeOf({ ok: false, error: new TerminalError("no") }), "terminal");
  assert.equal(outcomeOf({ ok: false, error: new Error("boom") }), "error");
  assert.equal(outcomeOf({ ok: false, error: "a string" }), "error");
});

Deno.test("settle: success forgets the backoff and queues nothing", () => {
  const { queue, queued, samples, logs, target } = setup();
  queue.addRateLimited("ns/a");
  queue.addRateLimited("ns/a");
  assert.equal(queue.numRequeues("ns/a"), 2);
  assert.equal(
    settle("ns/a", { ok: true, result: undefined }, performance.now(), target),
    "success",
  );
  assert.equal(queue.numRequeues("ns/a"), 0);
  assert.deepEqual(queued, []);
  assert.deepEqual(logs, []);
  assert.equal(samples.length, 1);
  assert.equal(samples[0].result, "success");
  assert.equal(samples[0].key, "ns/a");
  assert.equal(samples[0].controller, "c");
  assert.ok(samples[0].seconds >= 0);
  assert.ok(!("error" in samples[0]));
});

Deno.test("settle: requeue(0) queues at once, requeue(ms) after ms, both forget the backoff", () => {
  const { clock, queue, queued, samples, target } = setup();
  queue.addRateLimited("now");
  assert.equal(settle("now", { ok: true, result: requeue(0) }, 0, target), "requeue");
  assert.equal(queue.numRequeues("now"), 0);
  assert.equal(settle("later", { ok: true, result: requeue(500) }, 0, target), "requeue_after");
  assert.deepEqual(queued, ["requeue", "requeue"]);
  assert.deepEqual(samples.map((s) => s.result), ["requeue", "requeue_after"]);
  // "now" was also added rate-limited (5 ms) above; requeue(0) is due at once.
  clock.tick(0);
  assert.equal(queue.len(), 1);
  clock.tick(499);
  assert.deepEqual(queue.waiting().sort(), ["now"]);
  clock.tick(1);
  assert.deepEqual(queue.waiting().sort(), ["later", "now"]);
});

Deno.test("settle: an error is retried after its backoff and logged with the retry count", () => {
  const { clock, queue, queued, samples, logs, events, target } = setup();
  const error = new Error("boom");
  assert.equal(settle("ns/a", { ok: false, error }, 0, target), "error");
  assert.equal(queue.numRequeues("ns/a"), 1);
  assert.equal(queue.len(), 0, "not before the backoff");
  clock.tick(5);
  assert.equal(queue.len(), 1);
  assert.deepEqual(queued, ["error"]);
  assert.deepEqual(events, []);
  assert.equal(logs.length, 1);
  assert.equal(logs[0].level, "warn");
  assert.deepEqual(logs[0].props, { key: "ns/a", retry: 1, error: "boom" });
  assert.equal(samples[0].result, "error");
  assert.equal(samples[0].error, error);
});

Deno.test("settle: a TerminalError is not retried; it is logged and recorded as an Event", () => {
  const { clock, queue, queued, samples, logs, events, target } = setup();
  queue.addRateLimited("ns/a");
  const error = new TerminalError('Cannot deploy image "": image is empty');
  assert.equal(settle("ns/a", { ok: false, error }, 0, target), "terminal");
  assert.equal(queue.numRequeues("ns/a"), 0, "its backoff is forgotten");
  clock.tick(10_000);
  assert.equal(queue.len(), 1, "only the earlier add, nothing from the outcome");
  assert.deepEqual(queued, []);
  assert.deepEqual(events, ['ReconcileFailed: Cannot deploy image "": image is empty']);
  assert.equal(logs.length, 1);
  assert.equal(logs[0].level, "error");
  assert.equal(samples[0].result, "terminal");
  assert.equal(samples[0].error, error);
});

Deno.test("settle: the last of retry.maxAttempts is not retried; its backoff is forgotten and an Event names it", () => {
  const { clock, queue, queued, samples, logs, events, target } = setup();
  const error = new Error("boom");
  const key = "ns/a";
  for (let attempt = 1; attempt <= 3; attempt++) {
    const retry = { attempt, maxAttempts: 3, last: attempt === 3 };
    assert.equal(queue.numRequeues(key), attempt - 1, "the queue counts the attempts");
    assert.equal(settle(key, { ok: false, error }, 0, target, retry), "error");
  }
  assert.equal(queue.numRequeues(key), 0, "the next event starts again at attempt 1");
  clock.tick(10_000);
  queue.shutDown();
  // The first two attempts were retried; the third queued nothing.
  assert.deepEqual(queued, ["error", "error"]);
  assert.deepEqual(events, [
    "RetriesExhausted: Reconcile failed 3 times (retry.maxAttempts 3), not retried until the object changes; last error: boom",
  ]);
  assert.deepEqual(logs.map((l) => l.level), ["warn", "warn", "error"]);
  assert.deepEqual(logs[2].props, { key, attempts: 3, error: "boom" });
  assert.deepEqual(samples.map((s) => s.result), ["error", "error", "error"]);
});
