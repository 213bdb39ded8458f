import assert from "node:assert/strict";
import { z } from "zod";
import { ConfigMap } from "../../core/kinds.ts";
import { defineResource } from "../../schema/define_resource.ts";
import { reconcile } from "./reconcile.ts";
import {
  exhaustedMessage,
  retryPolicyOf,
  retryRateLimiter,
  statusSchemaHas,
  withRetryDefaults,
} from "./retry.ts";

Deno.test("retryPolicyOf fills in the defaults: 5 ms doubling to 1,000,000 ms, no end", () => {
  assert.deepEqual(retryPolicyOf("c", {}), {
    baseDelayMs: 5,
    maxDelayMs: 1_000_000,
    maxAttempts: Infinity,
  });
});

Deno.test("retryPolicyOf refuses fields out of range and unknown ones, naming them", () => {
  const cases: [object, RegExp][] = [
    [{ baseDelayMs: -1 }, /retry\.baseDelayMs must be a finite number >= 0, got "-1"/],
    [{ maxDelayMs: Infinity }, /retry\.maxDelayMs must be a finite number >= 0/],
    [{ baseDelayMs: 10, maxDelayMs: 5 }, /retry\.baseDelayMs "10" exceeds retry\.maxDelayMs "5"/],
    [{ maxAttempts: 0 }, /retry\.maxAttempts must be an integer >= 1 or Infinity, got "0"/],
    [{ maxAttempts: 2.5 }, /retry\.maxAttempts must be an integer/],
  ];
  for (const [retry, message] of cases) {
    assert.throws(() => retryPolicyOf('controller "c"', retry), RangeError);
    assert.throws(() => retryPolicyOf('controller "c"', retry), message);
  }
  assert.throws(
    () => retryPolicyOf('controller "c"', { maxAttemps: 3 } as object),
    /Cannot define controller "c": unknown option "retry\.maxAttemps" \(known: baseDelayMs, maxDelayMs, maxAttempts\)/,
  );
});

Deno.test("reconcile() checks retry and onError", () => {
  assert.throws(
    () => reconcile(ConfigMap, { retry: { maxAttempts: -1 }, reconcile() {} }),
    /Cannot define controller "configmap": retry\.maxAttempts must be/,
  );
  assert.throws(
    () => reconcile(ConfigMap, { onError: "x" as never, reconcile() {} }),
    /Cannot define controller "configmap": onError is not a function/,
  );
  const c = reconcile(ConfigMap, { retry: { maxAttempts: 3 }, reconcile() {} });
  assert.deepEqual(c.retry, { baseDelayMs: 5, maxDelayMs: 1_000_000, maxAttempts: 3 });
  assert.deepEqual(c.retryOptions, { maxAttempts: 3 });
  assert.equal(reconcile(ConfigMap, { reconcile() {} }).retry, undefined);
});

Deno.test("retryRateLimiter backs off from baseDelayMs, doubling, capped at maxDelayMs", () => {
  const limiter = retryRateLimiter(retryPolicyOf("c", { baseDelayMs: 100, maxDelayMs: 300 }));
  assert.deepEqual([1, 2, 3, 4].map(() => limiter.when("k")), [100, 200, 300, 300]);
  assert.equal(limiter.numRequeues("k"), 4);
  limiter.forget("k");
  assert.equal(limiter.when("k"), 100);
});

Deno.test("withRetryDefaults: the controller's own fields win, the operator's fill the rest", () => {
  const own = reconcile(ConfigMap, { retry: { maxAttempts: 3 }, reconcile() {} });
  const merged = withRetryDefaults(own, { baseDelayMs: 50, maxAttempts: 10 }, "operator");
  assert.deepEqual(merged.retry, { baseDelayMs: 50, maxDelayMs: 1_000_000, maxAttempts: 3 });
  assert.equal(merged.reconcile, own.reconcile);
  assert.ok(Object.isFrozen(merged));
  const none = reconcile(ConfigMap, { reconcile() {} });
  assert.equal(withRetryDefaults(none, undefined, "operator"), none);
  assert.equal(withRetryDefaults(none, { maxAttempts: 2 }, "operator").retry?.maxAttempts, 2);
  assert.throws(
    () => withRetryDefaults(none, { maxAttempts: 0 }, 'operator "o"'),
    /Cannot define operator "o": retry\.maxAttempts/,
  );
});

Deno.test("statusSchemaHas tells a custom status with conditions from one without, and built-ins", () => {
  const With = defineResource({
    group: "t.kubeno.dev",
    version: "v1",
    kind: "With",
    spec: z.object({}),
    status: z.object({ conditions: z.array(z.object({ type: z.string() })).optional() }),
  });
  const Without = defineResource({
    group: "t.kubeno.dev",
    version: "v1",
    kind: "Without",
    spec: z.object({}),
    status: z.object({ phase: z.string().optional() }),
  });
  assert.equal(statusSchemaHas(With, "conditions"), true);
  assert.equal(statusSchemaHas(Without, "conditions"), false);
  assert.equal(statusSchemaHas(ConfigMap, "conditions"), false);
});

Deno.test("exhaustedMessage names the attempts and the first line of the last error", () => {
  assert.equal(
    exhaustedMessage({ attempt: 4, maxAttempts: 4, last: true }, new Error("boom\nstack")),
    "Reconcile failed 4 times (retry.maxAttempts 4), not retried until the object changes; last error: boom",
  );
});
