import assert from "node:assert/strict";
import { controllerOf, ownerReference, setControllerReference } from "./owner.ts";
import type { KubeObject } from "./object.ts";

const app: KubeObject = {
  apiVersion: "apps.kubeno.dev/v1",
  kind: "Myapp",
  metadata: { name: "web", namespace: "prod", uid: "u1" },
};
const node: KubeObject = { apiVersion: "v1", kind: "Node", metadata: { name: "n1", uid: "n" } };

Deno.test("setControllerReference adds, updates and keeps other owners", () => {
  const other = { apiVersion: "v1", kind: "Secret", name: "s", uid: "s1" };
  const cm: KubeObject = {
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "prod", ownerReferences: [other] },
  };
  setControllerReference(app, cm);
  setControllerReference(app, cm); // idempotent
  assert.deepEqual(cm.metadata.ownerReferences, [other, {
    apiVersion: "apps.kubeno.dev/v1",
    kind: "Myapp",
    name: "web",
    uid: "u1",
    controller: true,
    blockOwnerDeletion: true,
  }]);
  assert.equal(controllerOf(cm)?.uid, "u1");
  // A cluster-scoped owner may own namespaced and cluster-scoped objects.
  setControllerReference(node, { metadata: { name: "x", namespace: "prod" } });
  setControllerReference(node, { metadata: { name: "y" } });
});

Deno.test("setControllerReference refuses cross-namespace and second controllers", () => {
  assert.throws(
    () =>
      setControllerReference(app, { kind: "ConfigMap", metadata: { name: "c", namespace: "dev" } }),
    {
      name: "TypeError",
      message:
        'Cannot make Myapp "web" in namespace "prod" the controller of ConfigMap "c" in namespace "dev": an owner must be in the same namespace',
    },
  );
  assert.throws(
    () => setControllerReference(app, { kind: "Namespace", metadata: { name: "n" } }),
    /a namespaced owner cannot own a cluster-scoped object/,
  );
  const owned = {
    kind: "ConfigMap",
    metadata: {
      name: "c",
      namespace: "prod",
      ownerReferences: [{
        apiVersion: "v1",
        kind: "Other",
        name: "o",
        uid: "u9",
        controller: true,
      }],
    },
  };
  assert.throws(
    () => setControllerReference(app, owned),
    /already controlled by Other "o" \(uid "u9"\)/,
  );
  assert.throws(
    () => setControllerReference({ metadata: { name: "x", namespace: "prod" } }, owned),
    /apiVersion, kind, metadata.uid missing/,
  );
});

Deno.test("ownerReference", () => {
  assert.deepEqual(ownerReference(app), {
    apiVersion: "apps.kubeno.dev/v1",
    kind: "Myapp",
    name: "web",
    uid: "u1",
    controller: false,
    blockOwnerDeletion: false,
  });
  assert.equal(
    ownerReference(app, { controller: true, blockOwnerDeletion: false }).blockOwnerDeletion,
    false,
  );
});
