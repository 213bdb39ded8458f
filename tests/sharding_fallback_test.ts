// The sharded test operator against an API server without the ShardedListAndWatch feature
// (the same v1.37 server with the gate off; servers before 1.36 ignore `shardSelector` the
// same way): the server sends every object to every replica. The signal is an object of
// another replica's shards arriving — not a list without `shardInfo`, which v1.37 sends for
// custom resources with the feature on too — so each replica filters on the client by the same
// hash, says so once in its log and in kubeno_shard_client_side_filtering, caches only its
// share, and every object converges. One control plane for the file.
import assert from "node:assert/strict";
import { createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { startControlPlane } from "../testing.ts";
import { Shardwork } from "./fixtures/shard_operator.ts";
import { FIXTURE, replica, sample, scrape } from "./_sharding.ts";
import { mapConcurrent, waitFor } from "./_helpers.ts";

Deno.test("without ShardedListAndWatch, sharded replicas filter on the client and say so", async () => {
  await using cp = await startControlPlane({ featureGates: { ShardedListAndWatch: false } });
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", FIXTURE, "install", "--kubeconfig", cp.kubeconfigPath],
    stderr: "piped",
  }).output();
  assert.equal(install.code, 0, new TextDecoder().decode(install.stderr));
  await admin.create(Namespace, { metadata: { name: "fallback" } });
  const t0 = Date.now();
  const replicas = ["f1", "f2"].map((name) => replica(cp, name, cp.kubeconfigPath, t0));
  for (const r of replicas) r.start();
  try {
    const n = 400;
    await mapConcurrent(
      Array.from({ length: n }, (_, i) => `w${i}`),
      16,
      (name) =>
        admin.create(Shardwork, { metadata: { name, namespace: "fallback" }, spec: { value: 7 } })
          .then(() => {}),
    );
    await waitFor(async () => {
      const items = (await admin.list(Shardwork, { namespace: "fallback" })).items;
      return items.filter((w) => w.status?.observed === 7).length === n;
    }, { what: `${n} Shardworks converged`, timeoutMs: 90_000 });
    let texts: string[] = [];
    await waitFor(async () => {
      texts = await Promise.all(replicas.map((r) => scrape(r.current!)));
      return texts.reduce((s, t) => s + sample(t, "kubeno_shard_objects"), 0) === n &&
        texts.every((t) => sample(t, "kubeno_shard_owned") === 6);
    }, { what: "each replica owning 6 shards and caching only their objects" });
    for (const [i, r] of replicas.entries()) {
      const inst = r.current!;
      const said = inst.logged("The API server ignored the shard selector");
      assert.equal(said.length, 1, `${r.name} says it once:\n${said.map((l) => l.raw).join("\n")}`);
      assert.equal(said[0].json?.kind, "Shardwork");
      assert.equal(said[0].json?.level, "warn");
      assert.equal(
        sample(texts[i], "kubeno_shard_client_side_filtering", {
          group: "shards.kubeno.dev",
          kind: "Shardwork",
        }),
        1,
      );
      const objects = sample(texts[i], "kubeno_shard_objects");
      console.log(
        `${r.name}: ${objects} of ${n} objects cached, ${
          sample(texts[i], "kubeno_shard_reconcile_total")
        } reconciles counted per shard; said: ${said[0].json?.msg}`,
      );
      assert.ok(Math.abs(objects - n / 2) <= 0.2 * n / 2, `${objects} objects, not about ${n / 2}`);
    }
    // The server sent every object to both replicas: nothing was filtered there.
    const api = (await cp.request("GET", "/metrics")).body as string;
    assert.equal(sample(api, "apiserver_watch_filtered_events_total"), 0);
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
  }
  for (const r of replicas) assert.deepEqual(r.exits, []);
});
