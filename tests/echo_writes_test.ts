// A controller's own writes coming back as watch events cause no writes (no echo applies, no
// repeated status patches), while every change by someone else is still reconciled: an owned
// ConfigMap edited or deleted by someone else is put back, a spec change reaches the owned
// object and the status. Writes are counted at the client, so the test sees exactly what the
// controller sent. One control plane for the file.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient, type RequestMetric } from "../src/client/client.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { ControllerRuntime } from "../src/runtime/controller/pipeline/runner.ts";
import { InformerFactory } from "../src/runtime/cache/informer_factory.ts";
import { waitFor } from "./_helpers.ts";
import { createNamespace, installStack, Stack } from "./_stack.ts";

const N = 20;

Deno.test("no echo writes, and changes by others are still reconciled", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installStack(admin);
  const ns = await createNamespace(admin, "echo");

  const writes: RequestMetric[] = [];
  using client = await createClient({
    kubeconfig: cp.kubeconfigPath,
    onRequest: (m) => void (m.method !== "GET" && writes.push(m)),
  });
  let active = 0;
  let reconciles = 0;
  const controller = reconcile(Stack, {
    owns: [ConfigMap],
    run: { maxConcurrent: 4 },
    async reconcile(stack, ctx) {
      reconciles++;
      await ctx.apply(ConfigMap, {
        metadata: { name: stack.metadata.name! },
        data: { value: stack.spec.value },
      });
      await ctx.patchStatus(stack, { observed: stack.spec.value });
    },
  });
  await using informers = new InformerFactory({ client });
  const runtime = new ControllerRuntime(controller, {
    client,
    informers,
    namespaces: [ns],
    metrics: { activeWorkers: (_, n) => void (active = n) },
  });
  informers.start();
  await runtime.start();
  const stacks = informers.for(Stack, { namespace: ns });
  const cms = informers.for(ConfigMap, { namespace: ns });

  /**
   * Waits until nothing is left to do: the caches hold what the server holds (so every event
   * of the controller's own writes has arrived and been mapped to keys), the queue is empty
   * and no reconcile runs.
   */
  const quiescent = () =>
    waitFor(async () => {
      const [s, c] = await Promise.all([
        admin.list(Stack, { namespace: ns }),
        admin.list(ConfigMap, { namespace: ns }),
      ]);
      // No kube-controller-manager runs here, so no kube-root-ca.crt either.
      const caught = (
        items: { metadata: { name?: string; resourceVersion?: string } }[],
        store: {
          size: number;
          get(key: string): { metadata: { resourceVersion?: string } } | undefined;
        },
      ) =>
        items.length === store.size &&
        items.every((o) =>
          store.get(`${ns}/${o.metadata.name}`)?.metadata.resourceVersion ===
            o.metadata.resourceVersion
        );
      return caught(s.items, stacks.store) && caught(c.items, cms.store) &&
        runtime.queue.len() === 0 && active === 0;
    }, { what: "the controller to be idle with its caches caught up" });
  const count = (since: number) => {
    const out: Record<string, number> = {};
    for (const w of writes.slice(since)) out[w.verb] = (out[w.verb] ?? 0) + 1;
    return out;
  };

  await t.step(
    "converging writes each object once: no echo apply, no repeated status",
    async () => {
      for (let i = 0; i < N; i++) {
        await admin.create(Stack, {
          metadata: { name: `s-${i}`, namespace: ns },
          spec: { value: `v-${i}` },
        });
      }
      await waitFor(async () => {
        const list = await admin.list(Stack, { namespace: ns });
        return list.items.length === N &&
          list.items.every((s) => s.status?.observed === s.spec.value);
      }, { what: "every Stack to be observed" });
      await quiescent();
      // Each status write and each ConfigMap creation came back as an event: the echo of the
      // controller's own write, which starts no reconcile.
      assert.equal(reconciles, N, "one reconcile per Stack: echoes start none");
      assert.deepEqual(count(0), { apply: N, patch: N });
    },
  );

  await t.step("an owned ConfigMap edited by someone else is put back", async () => {
    const before = writes.length;
    await admin.patch(ConfigMap, "s-3", { data: { value: "tampered" } }, { namespace: ns });
    await waitFor(
      async () => (await admin.get(ConfigMap, "s-3", { namespace: ns })).data?.value === "v-3",
      { what: "the edited ConfigMap to be put back" },
    );
    await quiescent();
    assert.deepEqual(count(before), { apply: 1 });
  });

  await t.step("a field removed by someone else is put back", async () => {
    const before = writes.length;
    await admin.patch(ConfigMap, "s-4", { data: { value: null } }, { namespace: ns });
    await waitFor(
      async () => (await admin.get(ConfigMap, "s-4", { namespace: ns })).data?.value === "v-4",
      { what: "the removed value to be put back" },
    );
    await quiescent();
    assert.deepEqual(count(before), { apply: 1 });
  });

  await t.step("an owned ConfigMap deleted by someone else is recreated", async () => {
    const before = writes.length;
    await admin.delete(ConfigMap, "s-5", { namespace: ns });
    await waitFor(
      async () =>
        (await admin.get(ConfigMap, "s-5", { namespace: ns }).catch(() => undefined))?.data
          ?.value === "v-5",
      { what: "the deleted ConfigMap to be recreated" },
    );
    await quiescent();
    assert.deepEqual(count(before), { apply: 1 });
  });

  await t.step("a spec change reaches the owned object and the status, once each", async () => {
    const before = writes.length;
    await admin.patch(Stack, "s-6", { spec: { value: "new" } }, { namespace: ns });
    await waitFor(async () => {
      const s = await admin.get(Stack, "s-6", { namespace: ns });
      const cm = await admin.get(ConfigMap, "s-6", { namespace: ns });
      return s.status?.observed === "new" && cm.data?.value === "new";
    }, { what: "the spec change to be reconciled" });
    await quiescent();
    assert.deepEqual(count(before), { apply: 1, patch: 1 });
  });

  await t.step("a status changed by someone else is written again", async () => {
    const before = writes.length;
    await admin.patchStatus(Stack, "s-7", { status: { observed: "someone" } }, { namespace: ns });
    await waitFor(
      async () => (await admin.get(Stack, "s-7", { namespace: ns })).status?.observed === "v-7",
      { what: "the status to be written again" },
    );
    await quiescent();
    assert.deepEqual(count(before), { patch: 1 });
  });

  await runtime.stop(10_000);
});
