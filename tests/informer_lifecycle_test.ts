// Informers on demand, against a real kube-apiserver: a manager already running starts an
// informer for a kind no controller declared (its objects reach the handlers), then stops
// it (its handlers are told and called no more, its store is emptied, and the API server's
// own gauge shows the watch closed).
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import type { ObjectEvent } from "../src/runtime/watch/watch.ts";
import { serverWatches, uniqueName, waitFor } from "./_helpers.ts";

Deno.test("informers start and stop while the manager runs", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const ns = uniqueName("dyn");
  await client.create(Namespace, { metadata: { name: ns } });

  /** Watches of Secrets open in kube-apiserver, by its own gauge. */
  const secretWatches = () => serverWatches(cp, "secrets");

  const reconciled: string[] = [];
  const manager = createManager({
    client,
    namespaces: [ns],
    controllers: [reconcile(ConfigMap, { reconcile: (_cm, ctx) => void reconciled.push(ctx.key) })],
  });
  const done = manager.start();
  await client.create(ConfigMap, { metadata: { name: "c", namespace: ns } });
  await waitFor(() => manager.ready() && reconciled.includes(`${ns}/c`), {
    what: "the manager to run its controller",
  });
  const before = await secretWatches();

  const seen: string[] = [];
  let stopped = 0;
  const informers = manager.informers!;
  const hold = informers.acquire(Secret, { namespace: ns });
  const secrets = hold.informer;

  await t.step("an informer started after the manager runs delivers objects", async () => {
    assert.equal(secrets.hasSynced, false);
    secrets.addHandler({
      onEvent: (ev: ObjectEvent<Secret>) => void seen.push(`${ev.type} ${ev.object.metadata.name}`),
      onStopped: () => void stopped++,
    });
    await secrets.synced();
    await client.create(Secret, { metadata: { name: "s1", namespace: ns } });
    await waitFor(() => seen.includes("added s1"), { what: "the new informer to see s1" });
    assert.ok(secrets.get({ namespace: ns, name: "s1" }), "s1 is in its store");
    assert.ok([...informers.all()].includes(secrets), "the factory lists it");
    assert.ok(manager.health().informers.length >= 1);
    await waitFor(async () => (await secretWatches()) === before + 1, {
      what: `the API server to count one more Secret watch (had ${before})`,
    });
    console.log(
      `apiserver_longrunning_requests{resource="secrets",verb="WATCH"}: ${before} → ${
        before + 1
      } after the informer started`,
    );
  });

  await t.step("a stopped informer runs no handler and its watch is closed", async () => {
    await hold.release();
    assert.equal(stopped, 1, "onStopped ran once");
    assert.equal(secrets.store.size, 0, "its store was emptied");
    assert.ok(![...informers.all()].includes(secrets), "the factory forgot it");
    // From the API server's side: the watch connection is gone.
    await waitFor(async () => (await secretWatches()) === before, {
      what: "the API server's Secret watch count to drop back",
    });
    console.log(
      `apiserver_longrunning_requests{resource="secrets",verb="WATCH"}: back to ${before} after it stopped`,
    );
    // A second watcher sees s2; the stopped informer's handler must not.
    await using witness = informer(Secret, { client, namespace: ns }).start();
    await witness.synced();
    await client.create(Secret, { metadata: { name: "s2", namespace: ns } });
    await waitFor(() => witness.get({ namespace: ns, name: "s2" }) !== undefined, {
      what: "the witness to see s2",
    });
    assert.deepEqual(seen.filter((s) => s.endsWith("s2")), [], "a handler ran after stop");
    // The manager's own informers kept running.
    await client.create(ConfigMap, { metadata: { name: "d", namespace: ns } });
    await waitFor(() => reconciled.includes(`${ns}/d`), { what: "the controller to go on" });
  });

  await t.step("the same kind can be started again, fresh", async () => {
    const again = informers.acquire(Secret, { namespace: ns });
    assert.notEqual(again.informer, secrets);
    await again.informer.synced();
    assert.deepEqual(
      again.informer.list().map((s) => s.metadata.name).sort(),
      ["s1", "s2"],
    );
    await again.release();
  });

  await t.step("a controller adds a watch at run time and drops it", async () => {
    const runtime = manager.runtimes[0];
    const count = (key: string) => reconciled.filter((k) => k === key).length;
    const watch = await runtime.addWatch({
      resource: Secret,
      namespaces: [ns],
      // Every Secret named after a ConfigMap reconciles that ConfigMap.
      map: (secret) => [`${ns}/${secret.metadata.name}`],
    });
    await waitFor(async () => (await secretWatches()) === before + 1, {
      what: "the API server to count the added watch",
    });
    const n = count(`${ns}/d`);
    await client.create(Secret, { metadata: { name: "d", namespace: ns } });
    await waitFor(() => count(`${ns}/d`) > n, { what: "the Secret d to reconcile ConfigMap d" });
    assert.ok(runtime.cache.get(Secret, "d", { namespace: ns }), "ctx.cache reads the new kind");

    await watch.remove();
    await waitFor(async () => (await secretWatches()) === before, {
      what: "the API server's Secret watch count to drop back after remove",
    });
    assert.throws(() => runtime.cache.list(Secret), /add it to reads/);
    const after = count(`${ns}/c`);
    await using witness = informer(Secret, { client, namespace: ns }).start();
    await client.create(Secret, { metadata: { name: "c", namespace: ns } });
    await waitFor(() => witness.get({ namespace: ns, name: "c" }) !== undefined, {
      what: "the witness to see the Secret c",
    });
    // A reconcile of c queued by the dropped watch would have come before the witness saw it
    // (the same event, one informer each); make sure one more ConfigMap event still flows.
    await client.create(ConfigMap, { metadata: { name: "e", namespace: ns } });
    await waitFor(() => reconciled.includes(`${ns}/e`), { what: "the controller to go on" });
    assert.equal(count(`${ns}/c`), after, "the dropped watch still queued a key");
  });

  await manager.stop();
  await done;
});
