import assert from "node:assert/strict";
import { kindKey, parseKindKey } from "./kind_key.ts";
import { metadataOnly } from "./metadata_only.ts";
import { resource } from "./resource.ts";
import { ConfigMap } from "./kinds.ts";
import { Deployment } from "./kinds_workloads.ts";

Deno.test("kindKey tells kinds, groups and views apart", () => {
  const keys = [
    kindKey(ConfigMap),
    kindKey(metadataOnly(ConfigMap)),
    kindKey(Deployment),
    kindKey(resource({ group: "example.com", version: "v1", kind: "Deployment" })),
    kindKey(resource({ group: "apps", version: "v2", kind: "Deployment" })),
  ];
  assert.equal(new Set(keys).size, keys.length);
  // The same kind described twice has one key.
  assert.equal(kindKey(resource({ group: "apps", version: "v1", kind: "Deployment" })), keys[2]);
});

Deno.test("kindKey's metadataOnly option keys either view", () => {
  const meta = metadataOnly(ConfigMap);
  assert.equal(kindKey(meta, { metadataOnly: false }), kindKey(ConfigMap));
  assert.equal(kindKey(ConfigMap, { metadataOnly: true }), kindKey(meta));
  assert.equal(kindKey(meta, {}), kindKey(meta));
});

Deno.test("parseKindKey is the inverse of kindKey", () => {
  assert.deepEqual(parseKindKey(kindKey(Deployment)), {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadataOnly: false,
  });
  assert.deepEqual(parseKindKey(kindKey(metadataOnly(ConfigMap))), {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadataOnly: true,
  });
  for (
    const bad of [
      "",
      "v1",
      "v1\u0000ConfigMap",
      "v1\u0000ConfigMap\u0000x",
      "a\u0000b\u0000full\u0000c",
    ]
  ) {
    assert.throws(() => parseKindKey(bad), TypeError, bad);
  }
});
