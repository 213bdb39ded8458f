// A dependent's async `desired` with its context, on a real control plane with workloads: the
// hash-annotation pattern. A Stack's `spec.value` is the html of a ConfigMap; the Deployment
// that mounts it depends on it and carries, in its pod template, the SHA-256 of the html as
// just applied (`ctx.dependents.config`). Changing the html rolls the Deployment (a new
// ReplicaSet); a reconcile with the same html changes nothing (the generations stay).
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { Deployment, ReplicaSet } from "../src/core/kinds_workloads.ts";
import { isNotFound } from "../src/client/errors/api_error.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { dependents } from "../src/runtime/dependents/dependents.ts";
import { waitFor } from "./_helpers.ts";
import { createNamespace, installStack, runObserved, Stack } from "./_stack.ts";

const HASH = "example.com/html-sha256";
const labels = { app: "page" };

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

const children = dependents(Stack, {
  config: {
    resource: ConfigMap,
    desired: (s) => ({ metadata: { name: "page" }, data: { "index.html": s.spec.value } }),
  },
  deployment: {
    resource: Deployment,
    dependsOn: ["config"],
    async desired(_s, ctx) {
      const config = ctx.dependents.config as ConfigMap | undefined;
      const hash = await sha256(config?.data?.["index.html"] ?? "");
      return {
        metadata: { name: "page" },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels, annotations: { [HASH]: hash } },
            spec: {
              containers: [{
                name: "web",
                image: "nginx",
                volumeMounts: [{ name: "html", mountPath: "/usr/share/nginx/html" }],
              }],
              volumes: [{ name: "html", configMap: { name: "page" } }],
            },
          },
        },
      };
    },
  },
});

const controller = reconcile(Stack, {
  owns: [children],
  async reconcile(stack, ctx) {
    const result = await children.reconcile(stack, ctx);
    if (result.error) throw result.error;
  },
});

Deno.test("dependents: an async desired hashes the ConfigMap it mounts into the pod template, so the Deployment rolls", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  await installStack(admin);
  const ns = await createNamespace(admin, "page");
  await using run = await runObserved(controller, client, ns);
  const deployment = () =>
    admin.get(Deployment, "page", { namespace: ns }).catch((e) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
  const hashOf = async () => (await deployment())?.spec?.template.metadata?.annotations?.[HASH];
  const replicaSets = async () =>
    (await admin.list(ReplicaSet, { namespace: ns })).items.filter((rs) =>
      rs.metadata.ownerReferences?.some((o) => o.kind === "Deployment" && o.name === "page")
    );

  await t.step("the template carries the hash of the html as applied", async () => {
    await admin.create(Stack, {
      apiVersion: Stack.apiVersion,
      kind: Stack.kind,
      metadata: { name: "page", namespace: ns },
      spec: { value: "<h1>a</h1>" },
    });
    const want = await sha256("<h1>a</h1>");
    await waitFor(async () => (await hashOf()) === want, {
      what: "the Deployment's template to carry the html's hash",
      timeoutMs: 60_000,
    });
    await waitFor(async () => (await replicaSets()).length === 1, {
      what: "the Deployment's first ReplicaSet",
      timeoutMs: 60_000,
    });
  });

  await t.step("a changed html rolls the Deployment: new template, new ReplicaSet", async () => {
    const before = await deployment();
    await admin.patch(Stack, "page", { spec: { value: "<h1>b</h1>" } }, { namespace: ns });
    const want = await sha256("<h1>b</h1>");
    await waitFor(async () => (await hashOf()) === want, {
      what: "the Deployment's template to carry the new html's hash",
      timeoutMs: 60_000,
    });
    const cm = await admin.get(ConfigMap, "page", { namespace: ns });
    assert.equal(cm.data?.["index.html"], "<h1>b</h1>");
    const after = await deployment();
    assert.equal(after?.metadata.generation, before!.metadata.generation! + 1, "one change");
    await waitFor(async () => {
      const sets = await replicaSets();
      return sets.length === 2 &&
        new Set(sets.map((rs) => rs.metadata.labels?.["pod-template-hash"])).size === 2;
    }, { what: "a second ReplicaSet for the new template", timeoutMs: 60_000 });
  });

  await t.step("the same html changes nothing: the hash is a function of its input", async () => {
    await waitFor(() => run.idle(), { what: "the controller to be idle" });
    const gen = (await deployment())?.metadata.generation;
    const cmVersion = (await admin.get(ConfigMap, "page", { namespace: ns })).metadata
      .resourceVersion;
    const queued = run.causes.length;
    await admin.patch(Stack, "page", { metadata: { annotations: { touched: "yes" } } }, {
      namespace: ns,
    });
    await waitFor(() => run.causes.length > queued && run.idle(), {
      what: "the touch to be reconciled",
    });
    assert.equal((await deployment())?.metadata.generation, gen);
    assert.equal(
      (await admin.get(ConfigMap, "page", { namespace: ns })).metadata.resourceVersion,
      cmVersion,
    );
  });
});
