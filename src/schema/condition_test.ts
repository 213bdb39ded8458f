import { deepStrictEqual, ok, strictEqual } from "node:assert";
import type { Condition } from "../core/object.ts";
import { setCondition } from "../core/conditions.ts";
import type { z as zod } from "zod";
import { z } from "../util/zod.ts";
import { conditionSchema, conditionsSchema } from "./condition.ts";
import { defineResource } from "./define_resource.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
const assertType = <T extends true>(_: T) => {};

const Memcached = defineResource({
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
  spec: z.object({ size: z.int().min(1).max(5) }),
  status: z.object({ conditions: conditionsSchema }),
});

const available: Condition = {
  type: "Available",
  status: "True",
  observedGeneration: 1,
  lastTransitionTime: "2025-01-01T00:00:00Z",
  reason: "Reconciling",
  message: "",
};
const withConditions = (conditions: unknown[]) => ({
  metadata: { name: "m", namespace: "default" },
  spec: { size: 1 },
  status: { conditions },
});

Deno.test("conditionSchema's output is kubeno's Condition", () => {
  assertType<Equal<zod.output<typeof conditionSchema>, Condition>>(true);
  // What setCondition writes passes.
  const written = setCondition(undefined, { type: "Available", status: "Unknown", reason: "R" });
  deepStrictEqual(conditionsSchema.parse(written), written);
});

Deno.test("the CRD's conditions are a list map keyed on type, with metav1.Condition's checks", () => {
  const status = Memcached.crd().spec.versions[0].schema.openAPIV3Schema.properties?.status;
  const conditions = status?.properties?.conditions;
  strictEqual(conditions?.["x-kubernetes-list-type"], "map");
  deepStrictEqual(conditions?.["x-kubernetes-list-map-keys"], ["type"]);
  ok(!status?.required?.includes("conditions"), "conditions is optional");
  const item = conditions?.items;
  ok(item && !Array.isArray(item));
  deepStrictEqual(item.required, ["type", "status", "lastTransitionTime", "reason", "message"]);
  deepStrictEqual(item.properties?.status.enum, ["True", "False", "Unknown"]);
  strictEqual(item.properties?.observedGeneration.minimum, 0);
  strictEqual(item.properties?.lastTransitionTime.format, "date-time");
  strictEqual(item.properties?.type.maxLength, 316);
  strictEqual(item.properties?.reason.minLength, 1);
  strictEqual(item.properties?.reason.maxLength, 1024);
  strictEqual(item.properties?.message.maxLength, 32768);
});

Deno.test("an invalid condition is refused", () => {
  ok(Memcached.safeParse(withConditions([available])).success);
  ok(Memcached.safeParse({ ...withConditions([]), status: {} }).success, "no conditions");
  const bad = Memcached.safeParse(withConditions([{ ...available, status: "Yes" }]));
  ok(!bad.success);
  strictEqual(bad.error.issues[0].path, "status.conditions[0].status");
  const cases: [string, Record<string, unknown>][] = [
    ["a negative observedGeneration", { observedGeneration: -1 }],
    ["an empty reason", { reason: "" }],
    ["a reason that is not CamelCase", { reason: "not ok" }],
    ["a type with a space", { type: "Not Ok" }],
    ["a time that is not RFC 3339", { lastTransitionTime: "yesterday" }],
    ["a missing message", { message: undefined }],
  ];
  for (const [what, change] of cases) {
    ok(!conditionSchema.safeParse({ ...available, ...change }).success, what);
  }
  ok(conditionSchema.safeParse({ ...available, type: "cache.example.com/Ready" }).success);
});

Deno.test("two conditions of one type are refused at the later index", () => {
  const dup = Memcached.safeParse(withConditions([available, { ...available, status: "False" }]));
  ok(!dup.success);
  strictEqual(dup.error.issues[0].path, "status.conditions[1]");
});
