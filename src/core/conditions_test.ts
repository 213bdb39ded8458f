import assert from "node:assert/strict";
import { findCondition, isFalse, isTrue, setCondition } from "./conditions.ts";

const t0 = new Date("2025-01-01T00:00:00.123Z");
const t1 = new Date("2025-01-02T00:00:00Z");

Deno.test("setCondition appends, updates in place and keeps others", () => {
  const a = setCondition(undefined, { type: "Ready", status: "False", reason: "Starting" }, {
    now: t0,
  });
  assert.deepEqual(a, [{
    type: "Ready",
    status: "False",
    lastTransitionTime: "2025-01-01T00:00:00Z",
    reason: "Starting",
    message: "",
  }]);
  const b = setCondition(a, { type: "Degraded", status: "False", reason: "Fine" }, { now: t0 });
  const c = setCondition(b, {
    type: "Ready",
    status: "False",
    reason: "Waiting",
    message: "1/3 up",
    observedGeneration: 4,
  }, { now: t1 });
  assert.equal(c.length, 2);
  assert.equal(c[0].type, "Ready");
  assert.equal(c[0].lastTransitionTime, "2025-01-01T00:00:00Z", "moved without a status change");
  assert.equal(c[0].message, "1/3 up");
  assert.equal(c[0].observedGeneration, 4);
  assert.equal(a[0].reason, "Starting", "input mutated");
  const d = setCondition(c, { type: "Ready", status: "True", reason: "Up" }, { now: t1 });
  assert.equal(d[0].lastTransitionTime, "2025-01-02T00:00:00Z");
  assert.ok(isTrue(d, "Ready") && isFalse(d, "Degraded") && !isTrue(d, "Missing"));
  assert.equal(findCondition(d, "Degraded")?.reason, "Fine");
  assert.equal(findCondition(undefined, "Ready"), undefined);
});

Deno.test("setCondition rejects bad input", () => {
  assert.throws(() => setCondition([], { type: "", status: "True", reason: "X" }), TypeError);
  assert.throws(() => setCondition([], { type: "A", status: "True", reason: "" }), TypeError);
  assert.throws(
    () => setCondition([], { type: "A", status: "true" as "True", reason: "X" }),
    /status must be "True", "False" or "Unknown", got "true"/,
  );
});
