import assert from "node:assert/strict";
import { reconcile, requeue, TerminalError } from "./reconcile.ts";
import { ConfigMap, Secret } from "../../core/kinds.ts";

Deno.test("reconcile() describes a controller with defaults", () => {
  const c = reconcile(Secret, { reconcile() {} });
  assert.equal(c.name, "secret");
  assert.equal(c.resource, Secret);
  assert.deepEqual([c.owns, c.watches, c.predicates], [[], [], []]);
  assert.equal(c.maxConcurrent, 1);
  assert.equal(c.fieldManager, "secret");
  assert.equal(c.finalizer, undefined);
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.owns));
  const d = reconcile(Secret, {
    name: "keys",
    owns: [ConfigMap],
    finalizer: "example.com/cleanup",
    finalize() {},
    maxConcurrent: 4,
    fieldManager: "keys-operator",
    reconcile() {},
  });
  assert.deepEqual([d.name, d.owns, d.finalizer, d.maxConcurrent, d.fieldManager], [
    "keys",
    [ConfigMap],
    "example.com/cleanup",
    4,
    "keys-operator",
  ]);
});

Deno.test("reconcile() rejects inconsistent options", () => {
  const r = () => {};
  assert.throws(() => reconcile(Secret, { reconcile: r, finalize: r }), /needs a finalizer name/);
  assert.throws(
    () => reconcile(Secret, { reconcile: r, finalizer: "a.io/x" }),
    /finalizer "a.io\/x" needs a finalize function/,
  );
  assert.throws(
    () => reconcile(Secret, { reconcile: r, finalize: r, finalizer: "not valid!" }),
    TypeError,
  );
  assert.throws(() => reconcile(Secret, { reconcile: r, maxConcurrent: 0 }), RangeError);
  assert.throws(() => reconcile(Secret, { reconcile: r, maxConcurrent: 1.5 }), RangeError);
});

Deno.test("requeue and TerminalError", () => {
  assert.equal(requeue(0).requeueAfterMs, 0);
  assert.throws(() => requeue(-1), RangeError);
  assert.throws(() => requeue(NaN), /got "NaN"/);
  const cause = new Error("bad");
  const e = new TerminalError("Cannot do it", { cause });
  assert.equal(e.name, "TerminalError");
  assert.equal(e.cause, cause);
});

Deno.test("reconcile() takes a timeoutMs, off by default, and refuses a bad one", () => {
  assert.equal(reconcile(Secret, { reconcile() {} }).timeoutMs, undefined);
  assert.equal(reconcile(Secret, { reconcile() {}, timeoutMs: 1_500 }).timeoutMs, 1_500);
  for (const timeoutMs of [0, -1, NaN, Infinity]) {
    assert.throws(
      () => reconcile(Secret, { reconcile() {}, timeoutMs }),
      RangeError,
      `timeoutMs ${timeoutMs}`,
    );
  }
});
