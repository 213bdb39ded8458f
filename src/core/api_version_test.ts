import assert from "node:assert/strict";
import { groupOf, parseApiVersion } from "./api_version.ts";

Deno.test("parseApiVersion splits at the first slash; no slash is the core group", () => {
  assert.deepEqual(parseApiVersion("apps/v1"), { group: "apps", version: "v1" });
  assert.deepEqual(parseApiVersion("v1"), { group: "", version: "v1" });
  assert.deepEqual(parseApiVersion("apps.kubeno.dev/v1beta1"), {
    group: "apps.kubeno.dev",
    version: "v1beta1",
  });
  assert.deepEqual(parseApiVersion(""), { group: "", version: "" });
  assert.deepEqual(parseApiVersion("a/b/c"), { group: "a", version: "b/c" });
});

Deno.test("groupOf is the group parseApiVersion finds", () => {
  for (const v of ["apps/v1", "v1", "", "/v1", "x.io/"]) {
    assert.equal(groupOf(v), parseApiVersion(v).group);
  }
  assert.equal(groupOf("batch/v1"), "batch");
  assert.equal(groupOf("v1"), "");
});
