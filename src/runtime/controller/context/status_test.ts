import assert from "node:assert/strict";
import { isSubset } from "./status.ts";

Deno.test("isSubset: would a merge patch change nothing?", () => {
  assert.ok(isSubset({ phase: "Running" }, { phase: "Running", other: 1 }));
  assert.ok(!isSubset({ phase: "Running" }, { phase: "Pending" }));
  assert.ok(!isSubset({ phase: "Running" }, undefined));
  assert.ok(isSubset({ gone: null }, { phase: "x" }));
  assert.ok(!isSubset({ phase: null }, { phase: "x" }));
  assert.ok(isSubset({ a: { b: [1, { c: 2 }] } }, { a: { b: [1, { c: 2 }], d: 1 } }));
  assert.ok(!isSubset({ a: { b: [1] } }, { a: { b: [1, 2] } }), "lists are replaced whole");
  assert.ok(isSubset({}, undefined) === false);
});
