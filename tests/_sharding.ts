// The sharding scenario of issue 18, shared by tests/sharding_test.ts (CI size) and
// tests/sharding.ts (`deno task sharding`, 6,000 objects): replicas of the sharded test
// operator (tests/fixtures/shard_operator.ts), each its own process restarted when it exits as
// the kubelet restarts a container, each authenticated as its own user, share Shardwork
// objects on one control plane:
//
//   1. three replicas split the shards; `objects` Shardworks are created and converge; each
//      replica's cache holds its share (kubeno_shard_objects from its /metrics, RSS from
//      /proc), and the API server's audit log shows each replica's lists and watches
//      carrying its shard selector;
//   2. every object's spec changes while one replica is SIGKILLed: its shards move to the
//      others once its member Lease expired (the Leases' holders are polled and timed);
//   3. every object changes again while a fourth replica joins (every tenth object's reconcile
//      held for a second, so hand-offs find reconciles in flight): shards rebalance to 3 each,
//      each handed off only after its reconciles drained.
//
// Then every object must have converged, no two processes' reconciles of one object may
// overlap in time (from their JSON logs: "Reconciling"/"Reconciled" with timestamps, a killed
// process's open reconcile counted until its kill), objects written by two replicas (their
// status field managers in managedFields) must belong to shards that changed hands, and every
// exit must be the harness's SIGKILL (counted: as many as it sent). Durations are measured and reported, never asserted.
import { createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { Lease } from "../src/core/kinds_cluster.ts";
import { shardOf } from "../src/runtime/sharding/hash_range.ts";
import { type ControlPlane, startControlPlane } from "../testing.ts";
import { Shardwork } from "./fixtures/shard_operator.ts";
import { installOperator, mapConcurrent, reportLog, waitFor } from "./_helpers.ts";
import { type Instance, SupervisedReplica } from "./_supervised_replica.ts";
import { freePort } from "../src/testing/process.ts";

export const FIXTURE = new URL("./fixtures/shard_operator.ts", import.meta.url).pathname;
const SHARDS = 12;
const NAMESPACES = 6;
/** Fast Lease timings, as the leader-election tests use them. */
export const LEASE_MS = 4_000;
export const RETRY_MS = 500;
const TIMINGS = [
  "--shard-lease-duration=4s",
  "--shard-renew-deadline=3s",
  "--shard-retry-period=500ms",
];

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** Options of {@linkcode runSharding}. */
export interface ShardingOptions {
  /** Shardworks created. */
  objects: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** One replica's share after phase 1. */
export interface ReplicaShare {
  replica: string;
  shards: number[];
  objects: number;
  rssMiB: number;
  hwmMiB: number;
}

/** What {@linkcode runSharding} measured and found. */
export interface ShardingReport {
  objects: number;
  shares: ReplicaShare[];
  /** Failed expectations; empty when the scenario passed. */
  problems: string[];
  /** Measured values, one per line, for the closing note. */
  measured: string[];
}

/** A replica process of the shard operator, restarted when it exits; call `start()`. */
export function replica(_cp: ControlPlane, name: string, kubeconfig: string, t0: number) {
  return new SupervisedReplica(name, kubeconfig, ["--namespace=default", ...TIMINGS], t0, {
    entry: FIXTURE,
    leaderElect: false,
    env: { SHARD_FIELD_MANAGER: `shard-${name}`, POD_NAME: "" },
    args: () => [`--metrics-bind-address=127.0.0.1:${freePort()}`, "--metrics-secure=false"],
  });
}

function metricsUrl(inst: Instance): string {
  const flag = inst.args.findLast((a) => a.startsWith("--metrics-bind-address="))!;
  return `http://${flag.split("=")[1]}/metrics`;
}

/** The text of an instance's /metrics. */
export async function scrape(inst: Instance): Promise<string> {
  const res = await fetch(metricsUrl(inst));
  return await res.text();
}

/** Sum of a metric's samples whose labels include `labels`. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) continue;
    const m = line.match(/^([^{ ]+)(?:\{(.*)\})? (\S+)$/);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

function memory(pid: number): { rss: number; hwm: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (key: string) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1]);
  return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
}

/** The shard Leases' holders, by shard index. */
async function holders(admin: Awaited<ReturnType<typeof createClient>>): Promise<string[]> {
  const list = await admin.list(Lease, {
    namespace: "default",
    labelSelector: "shards.kubeno.dev/of=shard-operator,shards.kubeno.dev/role=shard",
  });
  const out = new Array<string>(SHARDS).fill("");
  for (const l of list.items) {
    out[Number(l.metadata.labels?.["shards.kubeno.dev/shard"])] = l.spec?.holderIdentity ?? "";
  }
  return out;
}

/** The identity an instance joined with, from its log. */
function identity(inst: Instance): string | undefined {
  return inst.logged("Joined as ")[0]?.json?.identity ??
    inst.logged("Joining ")[0]?.json?.identity;
}

/**
 * Runs the scenario on its own control plane.
 *
 * @param options Size and a progress log.
 * @returns The report; `problems` lists what went wrong.
 */
export async function runSharding(options: ShardingOptions): Promise<ShardingReport> {
  const { say, measure, problems, measured } = reportLog(options.log);
  const n = options.objects;
  const auditDir = await Deno.makeTempDir({ prefix: "kubeno-audit-" });
  await Deno.writeTextFile(
    `${auditDir}/policy.yaml`,
    [
      "apiVersion: audit.k8s.io/v1",
      "kind: Policy",
      "omitStages: [RequestReceived]",
      "rules:",
      "  - level: Metadata",
      "    verbs: [list, watch]",
      '    resources: [{ group: "shards.kubeno.dev", resources: ["shardworks"] }]',
      "  - level: None",
    ].join("\n") + "\n",
  );
  const auditLog = `${auditDir}/audit.log`;
  await using cp = await startControlPlane({
    apiServerFlags: [
      `--audit-policy-file=${auditDir}/policy.yaml`,
      `--audit-log-path=${auditLog}`,
      "--audit-log-mode=blocking",
    ],
  });
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  await installOperator(FIXTURE, cp.kubeconfigPath);
  const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `shards-${i}`);
  for (const ns of namespaces) await admin.create(Namespace, { metadata: { name: ns } });

  const t0 = Date.now();
  const since = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  const users = new Map<string, string>();
  const start = async (name: string) => {
    const user = `shard-replica-${name}`;
    users.set(name, user);
    const kc = await cp.writeKubeconfig({ user, groups: ["system:masters"] });
    const r = replica(cp, name, kc, t0);
    r.start();
    return r;
  };
  const replicas = [await start("r1"), await start("r2"), await start("r3")];
  const all = () => replicas.flatMap((r) => r.instances);
  const live = () => replicas.map((r) => r.current!).filter((i) => i && !i.exited);
  /** Shards held per identity, from the Leases. */
  const spread = async () => {
    const per = new Map<string, number[]>();
    (await holders(admin)).forEach((h, i) => per.set(h, [...(per.get(h) ?? []), i]));
    return per;
  };
  const balanced = async (k: number) => {
    const ids = live().map(identity);
    if (ids.some((id) => !id)) return false;
    const per = await spread();
    return ids.every((id) => per.get(id!)?.length === SHARDS / k) && per.size === k;
  };
  await waitFor(() => balanced(3), { what: "3 replicas holding 4 shards each", timeoutMs: 90_000 })
    .catch(async (err) => {
      // What each replica did, for a run that never balances.
      const per = [...(await spread())].map(([h, shards]) => `${h || "free"}: ${shards.join(",")}`);
      const exits = replicas.flatMap((r) => r.exits).map((e) => JSON.stringify(e));
      const tails = all().map((i, k) =>
        `instance ${k} (${identity(i) ?? "no identity"}):\n` +
        i.lines.slice(-8).map((l) => `  ${l.raw}`).join("\n")
      );
      throw new Error(
        `${(err as Error).message}\nshards: ${per.join("; ")}\nexits: ${
          exits.join(", ") || "none"
        }\n` +
          tails.join("\n"),
      );
    });
  say(`${since()}: 3 replicas hold 4 shards each`);

  // Phase 1: objects created and converged; each cache holds its share.
  const names = Array.from({ length: n }, (_, i) => ({
    name: `w${i}`,
    namespace: namespaces[i % NAMESPACES],
  }));
  let value = 1;
  const created = Date.now();
  await mapConcurrent(
    names,
    16,
    (o) => admin.create(Shardwork, { metadata: o, spec: { value } }).then(() => {}),
  );
  const converged = async () => {
    let ok = 0;
    for (const ns of namespaces) {
      for (const w of (await admin.list(Shardwork, { namespace: ns })).items) {
        if (w.status?.observed === w.spec.value && w.spec.value === value) ok++;
      }
    }
    return ok === n;
  };
  await waitFor(converged, { what: `${n} Shardworks converged`, timeoutMs: 60_000 + n * 50 });
  measure(`phase 1: ${n} objects created and converged in ${Date.now() - created} ms`);
  const per = await spread();
  const shares: ReplicaShare[] = [];
  await waitFor(async () => {
    const texts = await Promise.all(live().map(scrape));
    return texts.every((t) => sample(t, "kubeno_shard_objects") > 0) &&
      texts.reduce((s, t) => s + sample(t, "kubeno_shard_objects"), 0) === n;
  }, { what: "every object cached by exactly one replica (kubeno_shard_objects)" });
  for (const r of replicas) {
    const inst = r.current!;
    const text = await scrape(inst);
    const mem = memory(inst.proc.pid);
    shares.push({
      replica: r.name,
      shards: per.get(identity(inst)!) ?? [],
      objects: sample(text, "kubeno_shard_objects"),
      rssMiB: mem.rss,
      hwmMiB: mem.hwm,
    });
  }
  for (const [i, r] of replicas.entries()) {
    const text = await scrape(r.current!);
    const foreign = shares[i].objects - shares[i].shards.reduce(
      (sum, shard) => sum + sample(text, "kubeno_shard_objects", { shard: String(shard) }),
      0,
    );
    if (foreign) problems.push(`${r.name} caches ${foreign} objects of shards it does not own`);
  }
  for (const s of shares) {
    measure(
      `phase 1: ${s.replica} holds shards ${s.shards.join(",")}: ${s.objects} objects cached (${
        (100 * s.objects / (n / 3)).toFixed(0)
      }% of a third), RSS ${s.rssMiB.toFixed(1)} MiB (peak ${s.hwmMiB.toFixed(1)} MiB)`,
    );
    if (Math.abs(s.objects - n / 3) > 0.2 * n / 3) {
      problems.push(`${s.replica} caches ${s.objects} objects, not within 20% of ${n / 3}`);
    }
  }
  const view = await cp.kubectl(
    "get",
    "leases",
    "-n",
    "default",
    "-l",
    "shards.kubeno.dev/of=shard-operator",
    "-L",
    "shards.kubeno.dev/range,shards.kubeno.dev/count",
  );
  measure(`kubectl get leases:\n${view.stdout.trimEnd()}`);
  // The API server's view: every replica's lists and watches carried its selector.
  const audit = (await Deno.readTextFile(auditLog)).split("\n").filter(Boolean).map((l) =>
    JSON.parse(l) as Json
  ).filter((
    e,
  ) => (e.verb === "watch" ? e.stage === "ResponseStarted" : e.stage === "ResponseComplete"));
  for (const [name, user] of users) {
    // Start-up's check that the kind is readable lists one object, unsharded.
    const probes = audit.filter((e) =>
      e.user?.username === user && e.verb === "list" && /[?&]limit=1(&|$)/.test(e.requestURI)
    ).length;
    const mine = audit.filter((e) =>
      e.user?.username === user && !(e.verb === "list" && /[?&]limit=1(&|$)/.test(e.requestURI))
    );
    const withSelector = mine.filter((e) =>
      /[?&]shardSelector=/.test(e.requestURI)
    );
    const lists = withSelector.filter((e) => e.verb === "list").length;
    const watches = withSelector.filter((e) => e.verb === "watch").length;
    const example = decodeURIComponent(
      withSelector[0]?.requestURI?.match(/shardSelector=([^&]*)/)?.[1] ?? "",
    ).replaceAll("+", " ");
    measure(
      `audit: ${name} (${user}) sent ${mine.length} lists and watches of shardworks, ${lists} lists and ${watches} watches with a shardSelector (besides ${probes} start-up check listing one object), e.g. ${example}`,
    );
    const without = mine.filter((e) => !/[?&]shardSelector=/.test(e.requestURI));
    if (!lists || !watches || without.length) {
      problems.push(
        `${name}'s lists and watches did not all carry a shard selector: ${
          without.map((e) => `${e.verb} ${e.requestURI}`).join(", ")
        }`,
      );
    }
  }
  const apiMetrics = (await cp.request("GET", "/metrics")).body as string;
  // apiserver_watch_shards_total (a gauge of open sharded watches) is decremented more than
  // once per watch in v1.37.2 and goes negative; the filtered-events counter is reliable.
  const shardedWatches = sample(apiMetrics, "apiserver_watch_shards_total", {
    resource: "shardworks",
  });
  const filtered = sample(apiMetrics, "apiserver_watch_filtered_events_total", {
    resource: "shardworks",
  });
  measure(
    `apiserver: apiserver_watch_filtered_events_total{resource="shardworks"} = ${filtered} events withheld from watchers outside their shards; apiserver_watch_shards_total = ${shardedWatches} (unreliable in v1.37.2); ` +
      `apiserver_request_total for shardworks: LIST ${
        sample(apiMetrics, "apiserver_request_total", { resource: "shardworks", verb: "LIST" })
      }, WATCH ${
        sample(apiMetrics, "apiserver_request_total", { resource: "shardworks", verb: "WATCH" })
      }`,
  );
  if (!(filtered >= n)) problems.push(`the API server filtered only ${filtered} watch events`);

  // Phase 2: every object changes while r2 is SIGKILLed.
  const before = await holders(admin);
  const victim = replicas[1].current!;
  const victimId = identity(victim)!;
  const victimShards = before.flatMap((h, i) => (h === victimId ? [i] : []));
  value = 2;
  let updated = 0;
  let killedAt = 0;
  let killsSent = 0;
  // Shard -> how long after the kill its Lease named another holder, and which.
  const moved = new Map<number, { ms: number; to: string }>();
  const others = new Set(before.filter((h) => h && h !== victimId));
  const watcher = (async () => {
    while (moved.size < victimShards.length) {
      if (killedAt) {
        const now = await holders(admin);
        for (const i of victimShards) {
          if (!moved.has(i) && now[i] && now[i] !== victimId) {
            moved.set(i, { ms: Date.now() - killedAt, to: now[i] });
          }
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  await mapConcurrent(names, 8, async (o) => {
    await admin.patch(Shardwork, o.name, { spec: { value } }, { namespace: o.namespace });
    if (++updated === Math.floor(n / 3)) {
      victim.kill("SIGKILL");
      killsSent++;
      killedAt = Date.now();
      say(`${since()}: SIGKILL to r2 (${victimId}) after ${updated} updates`);
    }
  });
  await waitFor(() => moved.size === victimShards.length, {
    what: `r2's ${victimShards.length} shards to move`,
    timeoutMs: 60_000,
  });
  await watcher;
  const handoff = [...moved.values()].map((m) => m.ms);
  const toOthers = [...moved.values()].filter((m) => others.has(m.to)).length;
  measure(
    `phase 2: r2 SIGKILLed mid-load; its shards ${victimShards.join(",")} moved ${
      Math.min(...handoff)
    }-${
      Math.max(...handoff)
    } ms after the kill (lease duration ${LEASE_MS} ms + retry period ${RETRY_MS} ms = ${
      LEASE_MS + RETRY_MS
    } ms), ${toOthers} to the replicas that were already running, ${
      moved.size - toOthers
    } to r2's restarted process`,
  );
  await waitFor(converged, {
    what: "every object converged after the kill",
    timeoutMs: 60_000 + n * 50,
  });
  measure(`phase 2: every object converged ${Date.now() - killedAt} ms after the kill`);

  // Phase 3: every object changes again while a fourth replica joins.
  value = 3;
  const slow = { "shards.kubeno.dev/reconcile-delay-ms": "1000" };
  let joining = 0;
  updated = 0;
  await mapConcurrent(names, 8, async (o, i) => {
    await admin.patch(
      Shardwork,
      o.name,
      { metadata: i % 10 === 0 ? { annotations: slow } : {}, spec: { value } },
      { namespace: o.namespace },
    );
    if (++updated === Math.floor(n / 3)) {
      joining = Date.now();
      replicas.push(await start("r4"));
      say(`${since()}: r4 started after ${updated} updates`);
    }
  });
  await waitFor(() => balanced(4), {
    what: "4 replicas holding 3 shards each",
    timeoutMs: 90_000,
  });
  measure(
    `phase 3: r4 joined; 4 replicas hold 3 shards each ${Date.now() - joining} ms after it started`,
  );
  const drains = all().flatMap((i) => i.logged("Released shard ")).filter((l) => l.at >= joining)
    .map((l) => Number(l.json?.ms));
  measure(
    `phase 3: ${drains.length} shards released after draining ${Math.min(...drains)}-${
      Math.max(...drains)
    } ms (reconciles of every tenth object held 1 s)`,
  );
  await waitFor(converged, {
    what: "every object converged after the join",
    timeoutMs: 60_000 + n * 50,
  });
  const after = await holders(admin);

  // Checks: no two processes reconciled one object at once (logs), and writers by shard.
  const ends = new Map<Instance, number>();
  for (const r of replicas) {
    for (const inst of r.instances) if (inst.killedWith) ends.set(inst, killedAt);
  }
  const intervals = new Map<string, { inst: Instance; from: number; to: number }[]>();
  let reconciles = 0;
  for (const inst of all()) {
    const open = new Map<string, number>();
    for (const l of inst.lines) {
      const msg = l.json?.msg;
      if (typeof msg !== "string") continue;
      const key = l.json!.key;
      if (typeof key !== "string") continue;
      const ts = Date.parse(l.json!.ts ?? l.json!["@timestamp"] ?? "");
      // A line without a time would compare as NaN and hide an overlap.
      if (Number.isNaN(ts)) {
        problems.push(`a reconcile log line has no timestamp: ${JSON.stringify(l.json)}`);
        continue;
      }
      if (msg.startsWith("Reconciling ")) open.set(key, ts);
      else if (msg.startsWith("Reconciled ") && open.has(key)) {
        const list = intervals.get(key) ?? intervals.set(key, []).get(key)!;
        list.push({ inst, from: open.get(key)!, to: ts });
        open.delete(key);
        reconciles++;
      }
    }
    for (const [key, from] of open) {
      const list = intervals.get(key) ?? intervals.set(key, []).get(key)!;
      list.push({ inst, from, to: ends.get(inst) ?? Date.now() });
    }
  }
  let overlaps = 0;
  for (const [key, list] of intervals) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      for (let j = 0; j < i; j++) {
        if (list[j].inst !== list[i].inst && list[j].to > list[i].from) {
          overlaps++;
          if (overlaps <= 5) problems.push(`${key} reconciled by two processes at once`);
        }
      }
    }
  }
  // Every object was reconciled at least once in the logs, or the check compared nothing.
  if (reconciles < n) {
    problems.push(`only ${reconciles} reconciles found in the logs for ${n} objects`);
  }
  measure(
    `no double reconcile: ${reconciles} reconciles of ${intervals.size} objects in ${all().length} processes' logs, ${overlaps} overlapping in time across processes`,
  );
  const moves = new Set<number>();
  for (let i = 0; i < SHARDS; i++) if (before[i] !== after[i]) moves.add(i);
  for (const i of victimShards) moves.add(i);
  let multi = 0, unexplained = 0;
  for (const ns of namespaces) {
    const list = await cp.request("GET", `/apis/shards.kubeno.dev/v1/namespaces/${ns}/shardworks`);
    for (const obj of list.body.items as Json[]) {
      const managers = new Set<string>(
        (obj.metadata.managedFields ?? []).filter((m: Json) =>
          m.subresource === "status" && String(m.manager).startsWith("shard-")
        ).map((m: Json) => m.manager),
      );
      if (managers.size < 2) continue;
      multi++;
      const shard = shardOf(obj as never, "uid", SHARDS);
      if (!moves.has(shard)) {
        unexplained++;
        if (unexplained <= 5) {
          problems.push(
            `${ns}/${obj.metadata.name} (shard ${shard}, never moved) written by ${[...managers]}`,
          );
        }
      }
    }
  }
  measure(
    `managedFields: ${multi} objects have status writes by two or more replicas, all in shards that changed hands (${
      [...moves].sort((a, b) => a - b).join(",")
    }); ${unexplained} elsewhere`,
  );
  // The server filtered: no replica ever received an object of another replica's shards.
  const foreign = all().filter((i) => i.logged("The API server ignored the shard selector").length);
  if (foreign.length) problems.push(`${foreign.length} processes received objects of other shards`);
  const noInfo = all().filter((i) =>
    i.logged("The API server's list of Shardwork carried no shardInfo").length
  );
  measure(
    `server-side filtering: 0 of ${all().length} processes received an object outside their shards (${foreign.length} said so); ` +
      `${noInfo.length} noted that lists of the custom resource carry no shardInfo (Kubernetes 1.37.2 echoes it for built-in kinds only)`,
  );
  // Only the harness's SIGKILL may end a process (a lost membership is exit 1, and a
  // problem here: nothing in this scenario should cost a replica its member Lease).
  const exits = replicas.flatMap((r) => r.exits);
  for (const e of exits.filter((e) => e.kind !== "sigkill")) {
    problems.push(`${e.replica}#${e.instance} exited, not by the harness's SIGKILL: ${e.reason}`);
  }
  const sigkills = exits.filter((e) => e.kind === "sigkill").length;
  if (sigkills !== killsSent) {
    problems.push(`${sigkills} exits by SIGKILL, but the harness sent ${killsSent}`);
  }
  measure(`exits: ${exits.map((e) => `${e.replica}#${e.instance}: ${e.reason}`).join("; ")}`);
  await Promise.all(replicas.map((r) => r.stop()));
  await Deno.remove(auditDir, { recursive: true }).catch(() => {});
  return { objects: n, shares, problems, measured };
}
