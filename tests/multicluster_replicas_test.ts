// Clusters over replicas: two fleet replicas split four members 2/2 through the hub's Leases
// (the shard coordinator's named shards: one Lease per cluster name). B joins after A engaged
// all four: the two that move to B are disengaged (drained) by A before B engages them, and
// the two A keeps never leave it. Replica A runs in this process,
// replica B in a child process that is SIGKILLed. Each member is engaged by exactly one
// replica at a time (sampled all along) and no member's reconciles of the two replicas
// overlap (their audit lines); B's members move to A within the Lease duration plus the retry
// period of its last renewal. The four members are four names for one API server (the hub's
// own): five control planes would not fit the machine these tests share.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { KUBECONFIG_SECRET_LABEL } from "../src/runtime/cluster/provider.ts";
import { fleetReplica, LEASE_MS, REPLICA_NAMESPACE, RETRY_MS } from "./_fleet_replica_options.ts";
import { waitFor } from "./_helpers.ts";

const MEMBERS = ["member-a", "member-b", "member-c", "member-d"];

interface Interval {
  replica: string;
  cluster: string;
  start: number;
  end: number;
}

Deno.test("two replicas split four members; a SIGKILLed replica's members move", async () => {
  await using cp = await startControlPlane();
  using hub = await createClient({ kubeconfig: cp.kubeconfigPath });
  await hub.create(Namespace, { metadata: { name: REPLICA_NAMESPACE } });
  const text = await Deno.readTextFile(cp.kubeconfigPath);
  for (const name of MEMBERS) {
    await hub.create(Secret, {
      metadata: {
        name,
        namespace: REPLICA_NAMESPACE,
        labels: { [KUBECONFIG_SECRET_LABEL]: "true" },
      },
      data: { kubeconfig: btoa(text) },
    });
  }
  await hub.create(ConfigMap, {
    metadata: { name: "poke", namespace: REPLICA_NAMESPACE, labels: { audit: "true" } },
    data: { n: "0" },
  });

  const intervals: Interval[] = [];
  const owned: Record<string, Set<string>> = { a: new Set(), b: new Set() };
  // Engage/disengage lines in the order they reached this process.
  const events: string[] = [];
  const record = (replica: string) => (line: string) => {
    const [what, cluster, start, end] = line.split(" ");
    if (what === "engaged" || what === "disengaged") events.push(`${replica} ${what} ${cluster}`);
    if (what === "engaged") owned[replica].add(cluster);
    if (what === "disengaged") owned[replica].delete(cluster);
    if (what === "reconciled") {
      intervals.push({ replica, cluster, start: Number(start), end: Number(end) });
    }
  };
  const a = fleetReplica(hub, "a", record("a"));
  const runningA = a.start();
  runningA.catch(() => {});
  // At no sample is a member engaged by both replicas.
  let doubly: string[] = [];
  const sampler = setInterval(() => {
    const both = [...owned.a].filter((c) => owned.b.has(c));
    if (both.length) doubly = both;
  }, 10);
  // Keep the reconciles coming, on every member at once (they share one API server).
  let n = 0;
  const poker = setInterval(() => {
    void hub.patch(ConfigMap, "poke", { data: { n: String(++n) } }, {
      namespace: REPLICA_NAMESPACE,
    }).catch(() => {});
  }, 100);
  let child: Deno.ChildProcess | undefined;
  try {
    await waitFor(() => owned.a.size === 4, { what: "replica A to engage the four members" });

    child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("./_fleet_replica.ts", import.meta.url).pathname,
        cp.kubeconfigPath,
        "b",
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    void (async () => {
      let rest = "";
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        rest += chunk;
        const lines = rest.split("\n");
        rest = lines.pop()!;
        for (const line of lines) record("b")(line);
      }
    })();
    await waitFor(
      () => owned.b.size === 2 && owned.a.size === 2,
      { what: "replicas A and B to split the four members 2/2", timeoutMs: 30_000 },
    ).catch((err) => {
      const state = `A: ${[...owned.a]} (named shards ${a.sharding?.ownedNames}), B: ${[
        ...owned.b,
      ]}`;
      throw new Error(`${err.message}; ${state}`);
    });
    const keptByA = [...owned.a].sort();
    // Each member B took was first disengaged by A (drained, then its Lease freed).
    for (const c of owned.b) {
      const freed = events.indexOf(`a disengaged ${c}`);
      const taken = events.indexOf(`b engaged ${c}`);
      assert.ok(
        freed >= 0 && freed < taken,
        `${c}: A disengaged it before B engaged it; events: ${events.join("; ")}`,
      );
    }
    // Some reconciles on B's side, then the kill.
    const bCount = () => intervals.filter((i) => i.replica === "b").length;
    const before = bCount();
    await waitFor(() => bCount() > before + 2, { what: "replica B to reconcile" });
    const split = `A: ${[...owned.a].sort().join(",")}; B: ${[...owned.b].sort().join(",")}`;
    const moving = owned.b.size;
    const t0 = performance.now();
    child.kill("SIGKILL");
    await child.status;
    owned.b.clear();
    await waitFor(() => owned.a.size === 4, {
      what: "replica A to take over B's members",
      timeoutMs: 60_000,
    });
    const tookMs = Math.round(performance.now() - t0);
    // Sticky: the members A kept were never disengaged by A.
    for (const c of keptByA) {
      assert.ok(!events.includes(`a disengaged ${c}`), `${c} stayed with A: ${events.join("; ")}`);
    }
    console.log(
      `split ${split}; B SIGKILLed: its ${moving} members engaged by A after ${tookMs} ms (Lease ${LEASE_MS} ms + retry ${RETRY_MS} ms)`,
    );
    assert.deepEqual(doubly, [], "no member was engaged by both replicas at once");
    for (const x of intervals) {
      for (const y of intervals) {
        if (x.replica === y.replica || x.cluster !== y.cluster) continue;
        assert.ok(
          x.end <= y.start || y.end <= x.start,
          `reconciles of ${x.cluster} overlap: ${JSON.stringify(x)} and ${JSON.stringify(y)}`,
        );
      }
    }
    const per = MEMBERS.map((m) =>
      `${m}: ${intervals.filter((i) => i.cluster === m && i.replica === "a").length}/${
        intervals.filter((i) => i.cluster === m && i.replica === "b").length
      }`
    );
    console.log(`reconciles by A/B per member: ${per.join(", ")}`);
  } finally {
    clearInterval(sampler);
    clearInterval(poker);
    try {
      child?.kill("SIGKILL");
    } catch { /* already gone */ }
    await a.stop();
  }
});
