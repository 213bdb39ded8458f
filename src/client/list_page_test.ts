import assert from "node:assert/strict";
import { peekListMetadata } from "./client.ts";

Deno.test("peekListMetadata reads the list metadata at the head of the body, items unread", () => {
  const body = JSON.stringify({
    kind: "ConfigMapList",
    apiVersion: "v1",
    metadata: {
      resourceVersion: "42",
      continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEi}{",
      shardInfo: { selector: "shardRange(object.metadata.uid, '0x0', '0x8')" },
    },
    items: [{ metadata: { name: "a" }, data: { "metadata": '{"continue":"x"}' } }],
  });
  assert.deepEqual(peekListMetadata(body), {
    resourceVersion: "42",
    continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEi}{",
    shardInfo: { selector: "shardRange(object.metadata.uid, '0x0', '0x8')" },
  });
  assert.deepEqual(peekListMetadata('{"kind":"L","metadata":{},"items":[]}'), {});
  // Not the API server's order, or not the top-level metadata: unknown until decoded.
  assert.equal(peekListMetadata('{"items":[{"metadata":{"name":"a"}}],"metadata":{}}'), undefined);
  assert.equal(peekListMetadata('{"kind":"L","metadata": {"continue":"x"},"items":[]}'), undefined);
  assert.equal(peekListMetadata('{"kind":"L","metadata":{"continue":"x'), undefined);
  assert.equal(peekListMetadata(""), undefined);
});
