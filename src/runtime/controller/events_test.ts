import assert from "node:assert/strict";
import { ApiError } from "../../client/errors/api_error.ts";
import { type EventClient, EventRecorder } from "./events.ts";
import { FakeClock } from "../../testing/fake_clock.ts";

const target = { verb: "patch", kind: "Event", apiVersion: "v1", plural: "events" };
const cm = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "a", namespace: "d", uid: "u", resourceVersion: "3" },
};

/** A stand-in client; `v1` is what events.k8s.io/v1 answers: served, 404 (not served) or 403. */
function fake(v1: "served" | 404 | 403 = 404) {
  const calls: { op: string; body: any }[] = [];
  const fail = { create: [] as unknown[], patch: [] as unknown[] };
  const client = {
    create(r: { group: string }, body: any) {
      if (r.group === "events.k8s.io" && v1 !== "served") {
        calls.push({ op: "refused", body });
        return Promise.reject(
          v1 === 404
            ? ApiError.fromStatus(target, 404, "404 page not found")
            : ApiError.fromStatus(target, 403, { code: 403, reason: "Forbidden", message: "no" }),
        );
      }
      calls.push({ op: r.group === "events.k8s.io" ? "create.v1" : "create", body });
      const f = fail.create.shift();
      return f ? Promise.reject(f) : Promise.resolve(body);
    },
    patch(r: { group: string }, name: string, body: any) {
      calls.push({ op: `${r.group === "events.k8s.io" ? "patch.v1" : "patch"} ${name}`, body });
      const f = fail.patch.shift();
      return f ? Promise.reject(f) : Promise.resolve(body);
    },
  } as unknown as EventClient;
  return { client, calls, fail };
}

Deno.test("EventRecorder writes, aggregates identical events and keeps distinct ones apart", async () => {
  const { client, calls } = fake();
  const clock = new FakeClock(Date.parse("2025-01-01T00:00:00Z"));
  const events = new EventRecorder(client, { component: "op", host: "pod-1", clock });
  await events.normal(cm, "Created", "Made it");
  clock.tick(2_000);
  await events.normal(cm, "Created", "Made it");
  await events.normal(cm, "Created", "Made another");
  // events.k8s.io/v1 is tried once, then core/v1 is used for good.
  assert.equal(calls.shift()!.op, "refused");
  assert.deepEqual(calls.map((c) => c.op.split(" ")[0]), ["create", "patch", "create"]);
  const first = calls[0].body;
  assert.equal(calls[1].op, `patch ${first.metadata.name}`);
  assert.deepEqual(calls[1].body, { count: 2, lastTimestamp: "2025-01-01T00:00:02Z" });
  assert.match(first.metadata.name, /^a\.[0-9a-f]+$/);
  assert.deepEqual(first.involvedObject, {
    apiVersion: "v1",
    kind: "ConfigMap",
    name: "a",
    namespace: "d",
    uid: "u",
    resourceVersion: "3",
  });
  assert.deepEqual([first.type, first.count, first.source], ["Normal", 1, {
    component: "op",
    host: "pod-1",
  }]);
  assert.equal(first.metadata.namespace, "d");
  assert.notEqual(calls[2].body.metadata.name, first.metadata.name);
});

Deno.test("EventRecorder never rejects, and starts over when the Event expired", async () => {
  const { client, calls, fail } = fake();
  const events = new EventRecorder(client, { component: "op", host: "" });
  fail.create.push(new Error("Connection refused"));
  await events.warning(cm, "Failed", "x"); // logged, not thrown
  assert.equal(calls.shift()!.op, "refused");
  await events.warning(cm, "Failed", "x");
  fail.patch.push(
    ApiError.fromStatus(target, 404, {
      code: 404,
      reason: "NotFound",
      message: "gone",
      details: { name: "t", kind: "things" },
    }),
  );
  await events.warning(cm, "Failed", "x");
  assert.deepEqual(calls.map((c) => c.op.split(" ")[0]), ["create", "create", "patch", "create"]);
  assert.equal(calls[3].body.count, 1);
  // Cluster-scoped objects get their Events in "default".
  await events.normal({ apiVersion: "v1", kind: "Node", metadata: { name: "n" } }, "Up", "y");
  assert.equal(calls[4].body.metadata.namespace, "default");
});

Deno.test("EventRecorder records through events.k8s.io/v1 where served, repeats as a series", async () => {
  const { client, calls } = fake("served");
  const clock = new FakeClock(Date.parse("2025-01-01T00:00:00Z"));
  const events = new EventRecorder(client, { component: "op", host: "pod-1", clock });
  await events.warning(cm, "Failed", "No luck");
  clock.tick(1_500);
  await events.warning(cm, "Failed", "No luck");
  await events.warning(cm, "Failed", "No luck");
  assert.deepEqual(calls.map((c) => c.op.split(" ")[0]), ["create.v1", "patch.v1", "patch.v1"]);
  const first = calls[0].body;
  assert.equal(calls[1].op, `patch.v1 ${first.metadata.name}`);
  assert.deepEqual(calls[1].body, {
    series: { count: 2, lastObservedTime: "2025-01-01T00:00:01.500000Z" },
  });
  assert.equal(calls[2].body.series.count, 3);
  assert.deepEqual(
    [first.type, first.reason, first.note, first.action, first.reportingController],
    ["Warning", "Failed", "No luck", "Failed", "op"],
  );
  assert.equal(first.reportingInstance, "pod-1");
  assert.equal(first.eventTime, "2025-01-01T00:00:00.000000Z");
  assert.deepEqual(first.regarding, {
    apiVersion: "v1",
    kind: "ConfigMap",
    name: "a",
    namespace: "d",
    uid: "u",
    resourceVersion: "3",
  });
  assert.equal(first.series, undefined, "a first occurrence has no series");
});

Deno.test("EventRecorder falls back to core/v1 when it may not write events.k8s.io (403)", async () => {
  const { client, calls } = fake(403);
  const events = new EventRecorder(client, { component: "op", host: "h" });
  await events.normal(cm, "Up", "y");
  await events.normal(cm, "Up", "y");
  assert.deepEqual(calls.map((c) => c.op.split(" ")[0]), ["refused", "create", "patch"]);
});
