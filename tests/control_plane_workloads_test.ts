// startControlPlane({ workloads: true }): controller-manager, scheduler and kwok make
// Deployments Ready and garbage-collect owned objects.
import * as k8s from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { waitFor, webDeploymentSpec } from "./_helpers.ts";

Deno.test("control plane with workloads: Deployment becomes Ready and is garbage-collected", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);

  const owner = await core.createNamespacedConfigMap({
    namespace: "default",
    body: { metadata: { name: "owner" } },
  });

  await t.step("a Deployment of 2 replicas reaches readyReplicas == 2", async () => {
    await apps.createNamespacedDeployment({
      namespace: "default",
      body: {
        metadata: {
          name: "web",
          ownerReferences: [{
            apiVersion: "v1",
            kind: "ConfigMap",
            name: "owner",
            uid: owner.metadata!.uid!,
          }],
        },
        spec: webDeploymentSpec(2),
      },
    });
    const ready = await waitFor(async () => {
      const d = await apps.readNamespacedDeployment({ name: "web", namespace: "default" });
      return d.status?.readyReplicas === 2 && d.status.readyReplicas;
    }, { what: "2 ready replicas", timeoutMs: 90_000 });
    assert.equal(ready, 2);
    const pods = await core.listNamespacedPod({ namespace: "default", labelSelector: "app=web" });
    assert.equal(pods.items.length, 2);
    for (const p of pods.items) assert.match(p.spec?.nodeName ?? "", /^kwok-node-/);
  });

  await t.step("deleting the owner garbage-collects the Deployment", async () => {
    await core.deleteNamespacedConfigMap({ name: "owner", namespace: "default" });
    await waitFor(
      () => is404(apps.readNamespacedDeployment({ name: "web", namespace: "default" })),
      {
        what: "the Deployment to be garbage-collected",
        timeoutMs: 90_000,
      },
    );
  });

  await t.step("namespace deletion completes", async () => {
    await core.createNamespace({ body: { metadata: { name: "doomed" } } });
    await core.createNamespacedConfigMap({
      namespace: "doomed",
      body: { metadata: { name: "x" } },
    });
    await core.deleteNamespace({ name: "doomed" });
    await waitFor(() => is404(core.readNamespace({ name: "doomed" })), {
      what: "the namespace to be gone",
      timeoutMs: 90_000,
    });
  });
});

/** Whether a client-node read fails with 404. */
function is404(read: Promise<unknown>): Promise<boolean> {
  return read.then(() => false, (e: { code?: number }) => e.code === 404);
}
