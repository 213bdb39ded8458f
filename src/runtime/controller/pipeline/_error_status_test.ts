import assert from "node:assert/strict";
import { z } from "zod";
import type { ConditionInput } from "../../../core/conditions.ts";
import { ConfigMap } from "../../../core/kinds.ts";
import type { KubeObject } from "../../../core/object.ts";
import { defineResource } from "../../../schema/define_resource.ts";
import { WorkQueue } from "../../queue/workqueue.ts";
import { FakeClock } from "../../../testing/fake_clock.ts";
import {
  type Controller,
  type ErrorContext,
  reconcile,
  type ReconcileContext,
  TerminalError,
} from "../reconcile.ts";
import type { RetryInfo } from "../retry.ts";
import { type ErrorStatusInit, retryInfoOf, writeErrorStatus } from "./_error_status.ts";

const Thing = defineResource({
  group: "t.kubeno.dev",
  version: "v1",
  kind: "Thing",
  spec: z.object({}),
  status: z.object({
    errorMessage: z.string().optional(),
    conditions: z.array(z.object({ type: z.string() })).optional(),
  }),
});

const primary = { metadata: { name: "a", namespace: "ns", generation: 2 } } as KubeObject;

/** A context recording its status writes, and a log recording warnings. */
function recording() {
  const writes: unknown[] = [];
  const warnings: string[] = [];
  const ctx = {
    key: "ns/a",
    patchStatus: (_obj: KubeObject, status: unknown) => {
      writes.push({ status });
      return Promise.resolve(primary);
    },
    setCondition: (_obj: KubeObject, condition: ConditionInput) => {
      writes.push({ condition });
      return Promise.resolve(primary);
    },
    flushStatus: () => Promise.resolve(primary),
  } as unknown as ReconcileContext<any>;
  const log = {
    warn: (m: string, p?: Record<string, unknown>) => void warnings.push(`${m} ${p?.error}`),
  } as ErrorStatusInit<any>["log"];
  return { ctx, writes, warnings, log };
}

Deno.test("retryInfoOf: the attempt is the queue's retries plus one; last at maxAttempts or terminal", () => {
  const queue = new WorkQueue<string>({ clock: new FakeClock() });
  const c = reconcile(ConfigMap, { retry: { maxAttempts: 2 }, reconcile() {} });
  const boom = new Error("boom");
  assert.deepEqual(retryInfoOf(c, queue, "k", boom), { attempt: 1, maxAttempts: 2, last: false });
  queue.addRateLimited("k");
  assert.deepEqual(retryInfoOf(c, queue, "k", boom), { attempt: 2, maxAttempts: 2, last: true });
  const unbounded = reconcile(ConfigMap, { reconcile() {} });
  assert.equal(retryInfoOf(unbounded, queue, "k", boom).last, false);
  assert.equal(retryInfoOf(unbounded, queue, "k", new TerminalError("no")).last, true);
});

Deno.test("writeErrorStatus writes onError's status once, with the retry info in ctx.retry", async () => {
  const { ctx, writes, warnings, log } = recording();
  const seen: { error: unknown; retry: RetryInfo; obj: KubeObject }[] = [];
  const controller = reconcile(Thing, {
    reconcile() {},
    onError(obj, error, ectx: ErrorContext<any>) {
      seen.push({ error, retry: ectx.retry, obj });
      return { errorMessage: (error as Error).message };
    },
  }) as Controller<any>;
  const error = new Error("boom");
  const retry = { attempt: 1, maxAttempts: Infinity, last: false };
  await writeErrorStatus({ controller, cached: primary, context: () => ctx, log }, error, retry);
  assert.deepEqual(writes, [{ status: { errorMessage: "boom" } }]);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].error, error);
  assert.deepEqual(seen[0].retry, retry);
  assert.notEqual(seen[0].obj, primary, "a copy");
  assert.deepEqual(warnings, []);
});

Deno.test("writeErrorStatus after the last attempt adds Ready=False RetriesExhausted when the status has conditions", async () => {
  const last = { attempt: 3, maxAttempts: 3, last: true };
  const error = new Error("boom");
  for (const [resource, expected] of [[Thing, 1], [ConfigMap, 0]] as const) {
    const { ctx, writes, log } = recording();
    const controller = reconcile(resource as typeof Thing, { reconcile() {} }) as Controller<any>;
    await writeErrorStatus({ controller, cached: primary, context: () => ctx, log }, error, last);
    assert.equal(writes.length, expected, resource.kind);
    if (expected) {
      assert.deepEqual(writes[0], {
        condition: {
          type: "Ready",
          status: "False",
          reason: "RetriesExhausted",
          message:
            "Reconcile failed 3 times (retry.maxAttempts 3), not retried until the object changes; last error: boom",
        },
      });
    }
  }
  // A TerminalError is the last attempt too, but not retries exhausted: no condition.
  const { ctx, writes, log } = recording();
  const controller = reconcile(Thing, { reconcile() {} }) as Controller<any>;
  await writeErrorStatus(
    { controller, cached: primary, context: () => ctx, log },
    new TerminalError("no"),
    { attempt: 1, maxAttempts: Infinity, last: true },
  );
  assert.deepEqual(writes, []);
});

Deno.test("writeErrorStatus: onError returning undefined writes nothing; one that throws is logged", async () => {
  const retry = { attempt: 1, maxAttempts: Infinity, last: false };
  const cases = [
    { onError: () => undefined, warned: [] },
    {
      onError: () => Promise.reject(new Error("handler broke")),
      warned: ["Cannot write the error status of {key}: {error} handler broke"],
    },
  ];
  for (const { onError, warned } of cases) {
    const { ctx, writes, warnings, log } = recording();
    const controller = reconcile(Thing, { reconcile() {}, onError }) as Controller<any>;
    await writeErrorStatus({ controller, cached: primary, context: () => ctx, log }, "e", retry);
    assert.deepEqual(writes, []);
    assert.deepEqual(warnings, warned);
  }
});
