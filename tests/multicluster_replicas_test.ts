// Clusters over replicas, with the operator program: two processes of
// `deno run -A examples/fleet.ts run` (as the README runs it, `operator({ fleet, sharding })`)
// share four members through the hub's Leases (one per member). What each member saw comes
// from the API server's audit log: every member's kubeconfig is its own user (`member-a`...),
// and each replica's user agent carries its `--shard-identity`, so an audit event names the
// member and the replica that wrote. Each member may write only its own Namespace's
// `fleet-settings` (a Role per member); the hub's settings change every 250 ms, which
// re-queues every member's Namespaces, so the members keep reconciling and writing. Checked:
//
// - each member's writes, in the API server's order, form one run per owner: replica-1 only
//   for the members it kept, replica-1 → replica-2 → replica-1 for those that moved (drained
//   before the hand-off, and no interleaving, i.e. never reconciled by both at once);
// - SIGKILL of replica-2: its members are written by replica-1 again within the Lease duration
//   plus the retry period, plus slack for sampling the audit log (100 ms), engaging the member
//   (client, informer sync) and the first reconcile (3 s allowed). The hand-off is reported.
//
// The four members are four users of one API server (the hub's own): five control planes do
// not fit the machine these tests share.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { KUBECONFIG_SECRET_LABEL } from "../src/runtime/cluster/provider.ts";
import { FLEET_NAMESPACE, SYNC_LABEL } from "../examples/fleet.ts";
import { freePort } from "../src/testing/process.ts";
import { startExample, waitFor } from "./_helpers.ts";

const MEMBERS = ["a", "b", "c", "d"];
const LEASE_MS = 4_000;
const RETRY_MS = 500;
/** Audit-log sampling (100 ms), engaging the member and its first reconcile. */
const SLACK_MS = 3_000;

interface Write {
  member: string;
  replica: string;
  at: number;
}

Deno.test("two operator processes share four members; a SIGKILLed one's members move", async () => {
  const auditDir = await Deno.makeTempDir({ prefix: "kubeno-audit-" });
  const auditLog = `${auditDir}/audit.log`;
  await Deno.writeTextFile(
    `${auditDir}/policy.yaml`,
    [
      "apiVersion: audit.k8s.io/v1",
      "kind: Policy",
      "omitStages: [RequestReceived]",
      "rules:",
      "  - level: Metadata",
      "    verbs: [patch]",
      '    resources: [{ group: "", resources: ["configmaps"] }]',
      "  - level: None",
    ].join("\n") + "\n",
  );
  await using cp = await startControlPlane({
    apiServerFlags: [
      `--audit-policy-file=${auditDir}/policy.yaml`,
      `--audit-log-path=${auditLog}`,
      "--audit-log-mode=blocking",
    ],
  });
  using hub = await createClient({ kubeconfig: cp.kubeconfigPath });
  await hub.create(Namespace, { metadata: { name: FLEET_NAMESPACE } });
  await hub.create(ConfigMap, {
    metadata: { name: "fleet-settings", namespace: FLEET_NAMESPACE },
    data: { mode: "fast" },
  });
  // Every member reads everything and records Events; it writes ConfigMaps in its own team only.
  const RBAC = "rbac.authorization.k8s.io";
  const objects: Record<string, unknown>[] = [
    {
      apiVersion: `${RBAC}/v1`,
      kind: "ClusterRole",
      metadata: { name: "fleet-member-read" },
      rules: [
        {
          apiGroups: [""],
          resources: ["namespaces", "configmaps"],
          verbs: ["get", "list", "watch"],
        },
        { apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
      ],
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name: "fleet-member-read" },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: "fleet-member-read" },
      subjects: [{ apiGroup: RBAC, kind: "Group", name: "fleet-members" }],
    },
  ];
  for (const m of MEMBERS) {
    const ns = `team-${m}`;
    await hub.create(Namespace, { metadata: { name: ns, labels: { [SYNC_LABEL]: "true" } } });
    objects.push({
      apiVersion: `${RBAC}/v1`,
      kind: "Role",
      metadata: { name: "fleet-member-write", namespace: ns },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["create", "patch", "update"] }],
    }, {
      apiVersion: `${RBAC}/v1`,
      kind: "RoleBinding",
      metadata: { name: "fleet-member-write", namespace: ns },
      roleRef: { apiGroup: RBAC, kind: "Role", name: "fleet-member-write" },
      subjects: [{ apiGroup: RBAC, kind: "User", name: `member-${m}` }],
    });
    const kubeconfig = await cp.writeKubeconfig({ user: `member-${m}`, groups: ["fleet-members"] });
    await hub.create(Secret, {
      metadata: {
        name: `member-${m}`,
        namespace: FLEET_NAMESPACE,
        labels: { [KUBECONFIG_SECRET_LABEL]: "true" },
      },
      data: { kubeconfig: btoa(await Deno.readTextFile(kubeconfig)) },
    });
  }
  await Deno.writeTextFile(
    `${auditDir}/rbac.json`,
    JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
  );
  const applied = await cp.kubectl("apply", "-f", `${auditDir}/rbac.json`);
  assert.equal(applied.code, 0, applied.stderr);

  // Each member's own writes (its team's fleet-settings), in the API server's order.
  const writes = async (): Promise<Write[]> => {
    const text = await Deno.readTextFile(auditLog).catch(() => "");
    const out: Write[] = [];
    for (const line of text.split("\n")) {
      if (!line) continue;
      const e = JSON.parse(line);
      if (e.stage !== "ResponseComplete" || e.responseStatus?.code >= 300) continue;
      const member = /^member-(\w)$/.exec(e.user?.username ?? "")?.[1];
      const replica = /\((replica-\d)\)/.exec(e.userAgent ?? "")?.[1];
      if (!member || !replica || e.objectRef?.namespace !== `team-${member}`) continue;
      out.push({ member, replica, at: Date.parse(e.requestReceivedTimestamp) });
    }
    return out.sort((x, y) => x.at - y.at);
  };
  const writersSince = async (since: number) => {
    const per: Record<string, Set<string>> = Object.fromEntries(MEMBERS.map((m) => [m, new Set()]));
    for (const w of await writes()) if (w.at >= since) per[w.member].add(w.replica);
    return per;
  };
  // A change of the hub's settings re-queues every member's Namespaces: a write per member.
  let n = 0;
  const poker = setInterval(() => {
    void hub.patch(ConfigMap, "fleet-settings", { data: { n: String(++n) } }, {
      namespace: FLEET_NAMESPACE,
    }).catch(() => {});
  }, 250);
  const start = (identity: string) =>
    startExample(
      "examples/fleet.ts",
      [
        `--shard-identity=${identity}`,
        `--shard-lease-duration=${LEASE_MS}ms`,
        "--shard-renew-deadline=3s",
        `--shard-retry-period=${RETRY_MS}ms`,
        `--health-probe-bind-address=127.0.0.1:${freePort()}`,
        `--metrics-bind-address=127.0.0.1:${freePort()}`,
        "--metrics-secure=false",
      ],
      { KUBECONFIG: cp.kubeconfigPath },
      { cwd: new URL("../", import.meta.url).pathname },
    );
  const r1 = start("replica-1");
  let r2: ReturnType<typeof start> | undefined;
  try {
    const t1 = Date.now();
    await waitFor(async () => {
      const per = await writersSince(t1);
      return MEMBERS.every((m) => per[m].has("replica-1"));
    }, { what: "replica-1 to reconcile the four members", timeoutMs: 30_000 });
    r2 = start("replica-2");
    const t2 = Date.now();
    // replica-2 writes on two members; replica-1 keeps writing on the other two.
    let moved: string[] = [];
    await waitFor(async () => {
      const per = await writersSince(t2);
      moved = MEMBERS.filter((m) => per[m].has("replica-2"));
      return moved.length === 2;
    }, { what: "replica-2 to take two of the four members", timeoutMs: 30_000 }).catch((err) => {
      throw new Error(`${err.message}\nreplica-2 logs:\n${r2?.logs().slice(-3000)}`);
    });
    const kept = MEMBERS.filter((m) => !moved.includes(m));
    await new Promise((r) => setTimeout(r, 1_000)); // some writes of replica-2
    const killedAt = Date.now();
    await r2.stop("SIGKILL");
    let tookMs = 0;
    await waitFor(async () => {
      const back = (await writes()).filter((w) =>
        w.at >= killedAt && w.replica === "replica-1" && moved.includes(w.member)
      );
      if (new Set(back.map((w) => w.member)).size < moved.length) return false;
      tookMs = Math.max(...moved.map((m) => back.find((w) => w.member === m)!.at)) - killedAt;
      return true;
    }, {
      what:
        `replica-1 to reconcile replica-2's members ${moved} (Lease ${LEASE_MS} ms + retry ${RETRY_MS} ms + ${SLACK_MS} ms slack)`,
      timeoutMs: LEASE_MS + RETRY_MS + SLACK_MS,
    });
    await new Promise((r) => setTimeout(r, 500)); // writes after the take-over
    // Per member, the replicas that wrote in the API server's order, consecutive ones merged.
    const all = await writes();
    const runs = Object.fromEntries(MEMBERS.map((m) => {
      const seq = all.filter((w) => w.member === m).map((w) => w.replica);
      return [m, seq.filter((r, i) => i === 0 || seq[i - 1] !== r)];
    }));
    const counts = MEMBERS.map((m) => {
      const mine = all.filter((w) => w.member === m);
      const by = (r: string) => mine.filter((w) => w.replica === r).length;
      return `member-${m}: ${by("replica-1")}/${by("replica-2")}`;
    });
    console.log(
      `audit: writes by replica-1/replica-2 per member: ${counts.join(", ")}; runs: ${
        JSON.stringify(runs)
      }; replica-2 SIGKILLed: its members ${
        moved.map((m) => `member-${m}`)
      } reconciled by replica-1 after ${tookMs} ms (Lease ${LEASE_MS} ms + retry ${RETRY_MS} ms)`,
    );
    for (const m of kept) {
      assert.deepEqual(runs[m], ["replica-1"], `member-${m} stayed with replica-1`);
    }
    for (const m of moved) {
      assert.deepEqual(
        runs[m],
        ["replica-1", "replica-2", "replica-1"],
        `member-${m}: one replica at a time, handed over twice`,
      );
    }
  } finally {
    clearInterval(poker);
    await r2?.stop("SIGKILL");
    const status = await r1.stop("SIGTERM");
    assert.equal(status.code, 0, r1.logs().slice(-3000));
    await Deno.remove(auditDir, { recursive: true }).catch(() => {});
  }
});
