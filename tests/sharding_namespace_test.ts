// Sharding by namespace, in process: two managers (two replicas) each own half of the shards,
// and both the primaries (ConfigMaps labelled as parents) and the Secrets they own land in the
// shard of their namespace, so each replica caches its namespaces' parents and children only.
// The oracle is the test's own: FNV-1a 64 of the namespace as KEP-5866 defines it, cut into 12
// equal ranges, and the shard Leases' holders as the API server stores them; every namespace
// must sit wholly in the replica holding its shard, and the server must have done the
// filtering (no replica received an object it then dropped). One control plane for the file.
import assert from "node:assert/strict";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { Lease } from "../src/core/kinds_cluster.ts";
import { createManager, type Manager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { startControlPlane } from "../testing.ts";
import { mapConcurrent, waitFor } from "./_helpers.ts";

const PARENT = "sharding.kubeno.dev/parent";
const SHARDS = 12;

/** KEP-5866's hash, written out here rather than taken from the code under test. */
function fnv1a64(text: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h;
}
/** Shard i holds the hashes [ceil(2^64 i / 12), ceil(2^64 (i+1) / 12)). */
const shardOfNamespace = (ns: string) => Number((fnv1a64(ns) * BigInt(SHARDS)) >> 64n);

const parents = reconcile(ConfigMap, {
  name: "parents",
  primary: { labelSelector: `${PARENT}=true` },
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
  const received = new Map<string, { kept: number; dropped: number; clientSide: string[] }>();
  for (const identity of ["ns-a", "ns-b"]) {
    const seen = { kept: 0, dropped: 0, clientSide: [] as string[] };
    received.set(identity, seen);
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
        metrics: {
          received: (kept) => kept ? seen.kept++ : seen.dropped++,
          clientSideFiltering: (r) => seen.clientSide.push(r.kind),
        },
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
    // Who holds each shard, as the API server has it (the shard Leases).
    const leases = await admin.list(Lease, {
      namespace: "default",
      labelSelector: "shards.kubeno.dev/of=ns-operator,shards.kubeno.dev/role=shard",
    });
    const holderOf = new Map(
      leases.items.map((l) => [
        Number(l.metadata.labels?.["shards.kubeno.dev/shard"]),
        l.spec?.holderIdentity ?? "",
      ]),
    );
    assert.equal(holderOf.size, SHARDS, "a Lease per shard");
    const expected = (ns: string) => holderOf.get(shardOfNamespace(ns))!;
    const held = { parents: new Set<string>(), children: new Set<string>() };
    /** namespace -> the replicas caching any of its objects */
    const cachedBy = new Map<string, Set<string>>();
    for (const m of managers) {
      const me = m.sharding!.identity;
      const infs = [...m.informers!.all()];
      const cms = infs.filter((i) => i.resource.kind === "ConfigMap").flatMap((i) => i.list());
      const secrets = infs.filter((i) => i.resource.kind === "Secret").flatMap((i) => i.list());
      for (const obj of [...cms, ...secrets]) {
        const ns = obj.metadata.namespace!;
        assert.equal(
          expected(ns),
          me,
          `${ns}/${obj.metadata.name} (shard ${shardOfNamespace(ns)}) is cached by ${me}`,
        );
        cachedBy.set(ns, (cachedBy.get(ns) ?? new Set()).add(me));
      }
      for (const cm of cms) held.parents.add(`${cm.metadata.namespace}/${cm.metadata.name}`);
      for (const s of secrets) held.children.add(`${s.metadata.namespace}/${s.metadata.name}`);
      // Each namespace this replica's shards hold sits here whole: its 3 parents, 3 children.
      for (const ns of namespaces.filter((ns) => expected(ns) === me)) {
        assert.equal(cms.filter((o) => o.metadata.namespace === ns).length, 3, `${ns} parents`);
        assert.equal(
          secrets.filter((o) => o.metadata.namespace === ns && o.metadata.name!.endsWith("-child"))
            .length,
          3,
          `${ns} children`,
        );
      }
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
    for (const ns of namespaces) {
      assert.deepEqual([...cachedBy.get(ns) ?? []], [expected(ns)], `${ns} sits in one replica`);
    }
    // Both replicas hold namespaces, so the split is not all-in-one.
    assert.equal(new Set(namespaces.map(expected)).size, 2);
    // The server filtered: every object a replica received was in its shards.
    for (const [identity, seen] of received) {
      console.log(`${identity}: received ${seen.kept} kept, ${seen.dropped} dropped on the client`);
      assert.deepEqual(seen.clientSide, [], `${identity}: the server ignored the shard selector`);
      assert.equal(seen.dropped, 0, `${identity} received objects of another replica's shards`);
      assert.ok(seen.kept > 0);
    }
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
