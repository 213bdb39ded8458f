import assert from "node:assert/strict";
import { operatorManifests } from "./manifests.ts";
import { resource } from "../core/resource.ts";

const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });

Deno.test("a sharded operator's Deployment runs its replicas without --leader-elect, named by POD_NAME", () => {
  const m = operatorManifests({
    name: "w",
    version: "1",
    controllers: [{ name: "w", resource: Widget, owns: [], watches: [] }],
    crds: [],
    namespace: "w-system",
    image: "w:1",
    sharding: { replicas: 4 },
  });
  const dep = m.operator.find((o) => o.kind === "Deployment") as any;
  assert.equal(dep.spec.replicas, 4);
  const c = dep.spec.template.spec.containers[0];
  assert.ok(!c.args.includes("--leader-elect"));
  assert.deepEqual(c.env.find((e: any) => e.name === "POD_NAME")?.valueFrom, {
    fieldRef: { fieldPath: "metadata.name" },
  });
  const role = m.rbac.find((o) =>
    o.kind === "Role" && o.metadata.name === "w-leader-election"
  ) as any;
  assert.deepEqual(role.rules[0].verbs, ["get", "list", "watch", "create", "update", "delete"]);
});
