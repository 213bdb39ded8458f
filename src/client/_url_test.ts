import assert from "node:assert/strict";
import { queryString, resourcePath } from "./_url.ts";
import { resource } from "../core/resource.ts";

const Pods = resource({ group: "", version: "v1", kind: "Pod" });
const Deployments = resource({ group: "apps", version: "v1", kind: "Deployment" });
const Nodes = resource({ group: "", version: "v1", kind: "Node", namespaced: false });

Deno.test("resourcePath builds core, grouped, namespaced and cluster-scoped paths", () => {
  assert.equal(resourcePath(Pods), "/api/v1/pods");
  assert.equal(resourcePath(Pods, { namespace: "a" }), "/api/v1/namespaces/a/pods");
  assert.equal(
    resourcePath(Deployments, { namespace: "a", name: "web", subresource: "status" }),
    "/apis/apps/v1/namespaces/a/deployments/web/status",
  );
  assert.equal(resourcePath(Nodes, { namespace: "ignored", name: "n1" }), "/api/v1/nodes/n1");
  assert.equal(
    resourcePath(Pods, { namespace: "a b", name: "x/y" }),
    "/api/v1/namespaces/a%20b/pods/x%2Fy",
  );
});

Deno.test("resourcePath rejects an empty name and a subresource without a name", () => {
  assert.throws(() => resourcePath(Pods, { name: "" }), TypeError);
  assert.throws(() => resourcePath(Pods, { subresource: "status" }), TypeError);
});

Deno.test("queryString skips unset values and encodes the rest", () => {
  assert.equal(queryString({}), "");
  assert.equal(
    queryString({ watch: 1, a: undefined, b: "", c: false, d: true, labelSelector: "x in (a,b)" }),
    "?watch=1&d=true&labelSelector=x+in+%28a%2Cb%29",
  );
});
