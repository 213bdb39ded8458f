import assert from "node:assert/strict";
import { dataCopy, deepFreeze, frozenCopy } from "./freeze.ts";

Deno.test("frozenCopy copies JSON data deeply frozen and leaves the original as it is", () => {
  const answer = JSON.parse(
    '{"metadata":{"name":"a","labels":{"x":"1"},"managedFields":[{"manager":"m"}]},' +
      '"data":{"k":"v"},"list":[1,"two",null,{"deep":true}],"__proto__":{"polluted":1}}',
  );
  const copy = frozenCopy(answer);
  assert.deepStrictEqual(copy, answer);
  assert(copy !== answer && copy.metadata !== answer.metadata && copy.list !== answer.list);
  for (const o of [copy, copy.metadata, copy.metadata.labels, copy.list, copy.list[3]]) {
    assert(Object.isFrozen(o), JSON.stringify(o));
  }
  assert(!Object.isFrozen(answer) && !Object.isFrozen(answer.metadata));
  // "__proto__" stays an own key, as JSON.parse made it, and sets no prototype.
  assert(Object.hasOwn(copy, "__proto__"));
  assert.deepStrictEqual(Object.getPrototypeOf(copy), Object.prototype);
  assert.deepStrictEqual((copy as { polluted?: number }).polluted, undefined);
  answer.data.k = "changed";
  assert.deepStrictEqual(copy.data.k, "v");
  assert.deepStrictEqual(deepFreeze(structuredClone(answer)), frozenCopy(answer));
});

Deno.test("dataCopy copies plain data unfrozen, and anything else with structuredClone", () => {
  const when = new Date(0);
  const cached = deepFreeze({
    metadata: { name: "a", labels: { x: "1" } },
    spec: { list: [{ n: 1 }], when, unset: undefined },
  });
  const copy = dataCopy(cached);
  assert.deepStrictEqual(copy, structuredClone(cached));
  assert(!Object.isFrozen(copy) && !Object.isFrozen(copy.spec.list[0]));
  assert(Object.hasOwn(copy.spec, "unset"));
  assert(copy.spec.when instanceof Date && copy.spec.when !== when);
  copy.metadata.labels.x = "2";
  assert.strictEqual(cached.metadata.labels.x, "1");
  const frozen = frozenCopy(cached);
  assert(Object.isFrozen(frozen.spec.when) && frozen.spec.when instanceof Date);
});
