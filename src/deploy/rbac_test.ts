import assert from "node:assert/strict";
import { deriveRbac } from "./rbac.ts";
import { resource } from "../core/resource.ts";

const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
const Cluster = resource({ group: "example.com", version: "v1", kind: "Zone", namespaced: false });
const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
const Secret = resource({ group: "", version: "v1", kind: "Secret" });
const Deployment = resource({ group: "apps", version: "v1", kind: "Deployment" });

Deno.test("deriveRbac grants read, own and write verbs per kind, merged and sorted", () => {
  const rbac = deriveRbac([
    {
      name: "widget",
      resource: Widget,
      owns: [ConfigMap, Deployment],
      watches: [{ resource: Secret }],
      finalizer: "example.com/cleanup",
    },
  ]);
  assert.deepEqual(rbac.cluster, [
    {
      apiGroups: [""],
      resources: ["configmaps"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"] },
    {
      apiGroups: ["apps"],
      resources: ["deployments"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
    {
      apiGroups: ["example.com"],
      resources: ["widgets"],
      verbs: ["get", "list", "watch", "update", "patch"],
    },
    { apiGroups: ["example.com"], resources: ["widgets/finalizers"], verbs: ["update", "patch"] },
    {
      apiGroups: ["example.com"],
      resources: ["widgets/status"],
      verbs: ["get", "update", "patch"],
    },
  ]);
  assert.deepEqual(rbac.namespaced, []);
  assert.deepEqual(rbac.leaderElection, [
    {
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      verbs: ["get", "create", "update"],
    },
  ]);
});

Deno.test("deriveRbac: finalizers only with a finalizer or owned kinds; kinds shared by controllers get the union", () => {
  const rbac = deriveRbac([
    { name: "a", resource: Widget, owns: [], watches: [{ resource: ConfigMap }] },
    { name: "b", resource: Secret, owns: [ConfigMap], watches: [] },
  ]);
  const finalizers = rbac.cluster.flatMap((r) => r.resources ?? []).filter((x) =>
    x.endsWith("/finalizers")
  );
  // "b" sets controller ownerReferences (blockOwnerDeletion) on ConfigMaps: that needs
  // update on secrets/finalizers under OwnerReferencesPermissionEnforcement; "a" owns nothing.
  assert.deepEqual(finalizers, ["secrets/finalizers"]);
  const cm = rbac.cluster.find((r) => r.resources?.includes("configmaps"));
  assert.deepEqual(cm?.verbs, ["get", "list", "watch", "create", "update", "patch", "delete"]);
});

Deno.test("deriveRbac scoped: namespaced kinds and events in the Role, cluster-scoped kinds in the ClusterRole", () => {
  const rbac = deriveRbac(
    [{ name: "w", resource: Widget, owns: [ConfigMap], watches: [{ resource: Cluster }] }],
    { scoped: true, extraRules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }] },
  );
  assert.deepEqual(rbac.cluster, [
    { apiGroups: ["example.com"], resources: ["zones"], verbs: ["get", "list", "watch"] },
  ]);
  const res = rbac.namespaced.flatMap((r) => r.resources);
  assert.deepEqual(res.sort(), [
    "configmaps",
    "events",
    "events",
    "pods",
    "widgets",
    "widgets/finalizers",
    "widgets/status",
  ]);
});

Deno.test("deriveRbac keeps rules with resourceNames as given, and nothing for no controllers", () => {
  const named = { apiGroups: [""], resources: ["secrets"], resourceNames: ["tls"], verbs: ["get"] };
  const rbac = deriveRbac([], { extraRules: [named] });
  assert.deepEqual(rbac.cluster, [named]);
  assert.deepEqual(deriveRbac([]).cluster, []);
});

Deno.test("deriveRbac grants each cached kind in the namespaces it is cached in", () => {
  const rbac = deriveRbac([
    {
      name: "widget",
      resource: Widget,
      owns: [ConfigMap],
      watches: [],
      caches: [
        { resource: Widget, namespaces: ["apps"] },
        { resource: ConfigMap, namespaces: ["apps"] },
        { resource: Secret, namespaces: ["apps", "vault"] },
        { resource: Cluster },
      ],
    },
  ]);
  assert.deepEqual(rbac.cluster, [
    { apiGroups: ["example.com"], resources: ["zones"], verbs: ["get", "list", "watch"] },
  ]);
  assert.deepEqual(rbac.namespaced, []);
  assert.deepEqual(Object.keys(rbac.inNamespaces), ["apps", "vault"]);
  assert.deepEqual(rbac.inNamespaces.vault, [
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"] },
  ]);
  const apps = rbac.inNamespaces.apps;
  const verbs = (res: string) => apps.find((r) => r.resources?.includes(res))?.verbs.join();
  assert.equal(verbs("configmaps"), "get,list,watch,create,update,patch,delete");
  assert.equal(verbs("events"), "create,patch", "events go where the primaries are");
  assert.equal(verbs("secrets"), "get,list,watch");
  assert.equal(verbs("widgets"), "get,list,watch,update,patch");
  assert.equal(verbs("widgets/status"), "get,update,patch");
});
