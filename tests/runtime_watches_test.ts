// Watches decided at run time, against a real kube-apiserver: a controller whose config
// object names the kind to watch (a `watchesFrom(fn)` entry of `watches`) starts that watch
// after the reconcile that
// reads the change, is triggered by it, and drops it (the API server's own gauge shows the
// watch close) when the config no longer names it.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { reconcile, watchesFrom } from "../src/runtime/controller/reconcile.ts";
import { serverWatches, uniqueName, waitFor } from "./_helpers.ts";

Deno.test("a controller adds and drops a watch as its config says", async () => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const ns = uniqueName("dynw");
  await client.create(Namespace, { metadata: { name: ns } });
  await client.create(ConfigMap, { metadata: { name: "config", namespace: ns }, data: {} });

  /** Watches of Secrets open in kube-apiserver, by its own gauge. */
  const secretWatches = () => serverWatches(cp, "secrets");
  let reconciles = 0;
  const manager = createManager({
    client,
    namespaces: [ns],
    controllers: [reconcile(ConfigMap, {
      watches: [
        watchesFrom((cache) =>
          cache.get(ConfigMap, "config", { namespace: ns })?.data?.watch === "secrets"
            ? [{ resource: Secret, namespaces: [ns], map: () => [`${ns}/config`] }]
            : []
        ),
      ],
      reconcile: () => void reconciles++,
    })],
  });
  const done = manager.start();
  try {
    await waitFor(() => manager.ready() && reconciles > 0, { what: "the first reconcile" });
    const before = await secretWatches();
    const runtime = manager.runtimes[0];
    assert.throws(() => runtime.cache.list(Secret), /not declared/);

    await client.patch(ConfigMap, "config", { data: { watch: "secrets" } }, { namespace: ns });
    await waitFor(async () => (await secretWatches()) === before + 1, {
      what: `the API server to count the added Secret watch (had ${before})`,
    });
    const n = reconciles;
    await client.create(Secret, { metadata: { name: "s", namespace: ns } });
    await waitFor(() => reconciles > n, { what: "the Secret to reconcile the config" });
    assert.equal(runtime.cache.list(Secret).length, 1, "ctx.cache reads the added kind");
    console.log(`Secret watches: ${before} → ${before + 1} once the config named them`);

    await client.patch(ConfigMap, "config", { data: { watch: "" } }, { namespace: ns });
    await waitFor(async () => (await secretWatches()) === before, {
      what: "the API server's Secret watch count to drop back",
    });
    assert.throws(() => runtime.cache.list(Secret), /not declared/);
    console.log(`Secret watches: back to ${before} once the config no longer named them`);
  } finally {
    await manager.stop();
    await done;
  }
});
