// Sharding by namespace, in process: two managers (two replicas) each own half of the shards,
// and both the primaries (ConfigMaps labelled as parents) and the Secrets they own land in the
// shard of their namespace, so each replica caches its namespaces' parents and children only.
// One control plane for the file.
import assert from "node:assert/strict";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { createManager, type Manager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { startControlPlane } from "../testing.ts";
import { mapConcurrent, waitFor } from "./_helpers.ts";

const PARENT = "sharding.kubeno.dev/parent";

const parents = reconcile(ConfigMap, {
  name: "parents",
  scope: { labelSelector: `${PARENT}=true` },
  owns: [Secret],
  async reconcile(cm, ctx) {
    await ctx.apply(Secret, {
      metadata: { name: `${cm.metadata.name}-child` },
      stringData: { from: cm.metadata.name! },
    });
  },
});

Deno.test("sharding by namespace splits primaries and the children they own alike", async () => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  // Names that differ only in their last character hash to one range (FNV-1a's high bits
  // barely depend on the last bytes; README "Sharding"), so the number is not at the end.
  const namespaces = Array.from({ length: 16 }, (_, i) => `team-${i}-ns`);
  for (const ns of namespaces) await admin.create(Namespace, { metadata: { name: ns } });
  const objects = namespaces.flatMap((namespace) =>
    [0, 1, 2].map((i) => ({ namespace, name: `p${i}` }))
  );
  await mapConcurrent(
    objects,
    8,
    (o) =>
      admin.create(ConfigMap, { metadata: { ...o, labels: { [PARENT]: "true" } } }).then(() => {}),
  );
  const managers: Manager[] = [];
  const stops: AbortController[] = [];
  const runs: Promise<void>[] = [];
  for (const identity of ["ns-a", "ns-b"]) {
    const m = createManager({
      controllers: [parents],
      clientOptions: { kubeconfig: cp.kubeconfigPath },
      namespaces,
      sharding: {
        name: "ns-operator",
        namespace: "default",
        identity,
        key: "namespace",
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
      },
    });
    const stop = new AbortController();
    managers.push(m);
    stops.push(stop);
    runs.push(m.start(stop.signal));
  }
  try {
    await waitFor(async () => {
      const secrets = (await admin.list(Secret, {})).items.filter((s) =>
        s.metadata.name!.endsWith("-child")
      );
      return secrets.length === objects.length;
    }, { what: `${objects.length} children written`, timeoutMs: 60_000 });
    await waitFor(() => managers.every((m) => m.sharding?.owned.length === 6), {
      what: "each manager owning 6 shards",
    });
    const held = { parents: new Set<string>(), children: new Set<string>() };
    for (const m of managers) {
      const owned = new Set(m.sharding!.owned);
      const infs = [...m.informers!.all()];
      const cms = infs.filter((i) => i.resource.kind === "ConfigMap").flatMap((i) => i.list());
      const secrets = infs.filter((i) => i.resource.kind === "Secret").flatMap((i) => i.list());
      for (const obj of [...cms, ...secrets]) {
        assert.ok(
          owned.has(m.sharding!.shardOf(obj)),
          `${obj.metadata.namespace}/${obj.metadata.name}`,
        );
      }
      for (const cm of cms) held.parents.add(`${cm.metadata.namespace}/${cm.metadata.name}`);
      for (const s of secrets) held.children.add(`${s.metadata.namespace}/${s.metadata.name}`);
      const nsSeen = new Set([...cms, ...secrets].map((o) => o.metadata.namespace));
      console.log(
        `${m.sharding!.identity}: shards ${
          m.sharding!.owned.join(",")
        }, ${cms.length} parents and ${secrets.length} children cached, from ${nsSeen.size} of ${namespaces.length} namespaces`,
      );
      // A namespace's parents and children are cached together, and each replica has some.
      assert.equal(cms.length, secrets.length);
      assert.ok(cms.length > 0);
    }
    assert.equal(held.parents.size, objects.length, "every parent cached by one replica");
    assert.equal(held.children.size, objects.length, "every child cached by one replica");
  } finally {
    for (const s of stops) s.abort();
    await Promise.all(runs);
  }
});

Deno.test("a cluster-scoped primary cannot be sharded by namespace", async () => {
  const m = createManager({
    controllers: [reconcile(Namespace, { reconcile() {} })],
    sharding: { name: "x", key: "namespace" },
  });
  await assert.rejects(
    m.start(),
    /Cannot shard controller "namespace" by namespace: Namespace is cluster-scoped; shard by "uid"/,
  );
});
