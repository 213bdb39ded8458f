// startControlPlane({ workloads: true }): controller-manager, scheduler and kwok make
// Deployments Ready and garbage-collect owned objects.
import * as k8s from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ""}`);
}

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
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: { containers: [{ name: "web", image: "nginx" }] },
          },
        },
      },
    });
    const ready = await until("2 ready replicas", async () => {
      const d = await apps.readNamespacedDeployment({ name: "web", namespace: "default" });
      return d.status?.readyReplicas === 2 ? d.status.readyReplicas : undefined;
    });
    assert.equal(ready, 2);
    const pods = await core.listNamespacedPod({ namespace: "default", labelSelector: "app=web" });
    assert.equal(pods.items.length, 2);
    for (const p of pods.items) assert.match(p.spec?.nodeName ?? "", /^kwok-node-/);
  });

  await t.step("deleting the owner garbage-collects the Deployment", async () => {
    await core.deleteNamespacedConfigMap({ name: "owner", namespace: "default" });
    await until("the Deployment to be garbage-collected", async () => {
      try {
        await apps.readNamespacedDeployment({ name: "web", namespace: "default" });
        return undefined;
      } catch (e) {
        return (e as { code?: number }).code === 404 ? true : undefined;
      }
    });
  });

  await t.step("namespace deletion completes", async () => {
    await core.createNamespace({ body: { metadata: { name: "doomed" } } });
    await core.createNamespacedConfigMap({
      namespace: "doomed",
      body: { metadata: { name: "x" } },
    });
    await core.deleteNamespace({ name: "doomed" });
    await until("namespace to be gone", async () => {
      try {
        await core.readNamespace({ name: "doomed" });
        return undefined;
      } catch (e) {
        return (e as { code?: number }).code === 404 ? true : undefined;
      }
    });
  });
});
