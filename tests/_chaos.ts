// The chaos scenario of issue 20, shared by tests/chaos_test.ts (CI size) and
// tests/chaos.ts (`deno task chaos`, full size): two replicas of the widget operator
// (tests/fixtures/widget_operator.ts) with leader election, each restarted when it exits as
// the kubelet restarts a container, while
//
//   1. Widgets are created (a few at a time, retried while the API server is away),
//   2. at a third of them the API server crashes (SIGKILL) and starts again: a short outage,
//      about 3-5 s here, that the leader should ride out with the default lease timings,
//   3. at two thirds etcd is compacted, the leader is SIGKILLed and the API server restarts
//      gracefully at once (SIGTERM: it drains open watches for up to 10 s), so the killed
//      replica comes back while the API server is down,
//   4. once the API server is back, `deletes` Widgets that had been reconciled (they carry the
//      finalizer) are deleted while leadership is changing hands.
//
// Then every remaining Widget must converge (status Ready, its ConfigMap written), every
// deleted one must be gone with its finalizer run (a "Finalizing" line in some replica's log),
// and every exit of a replica must be the harness's SIGKILL or a Lease loss that followed an
// outage longer than the README's "always safe" 6 s. The report gives
// the restarts with their reasons and the measured times; nothing here asserts a duration.
//
// `operator: "myapp"` runs the same script with examples/myapp.ts instead (issue 14, see
// tests/_chaos_myapp.ts): admission webhooks behind a harness-owned load balancer, the webhook
// certificate rotated mid-way, workloads (Deployments) on kwok nodes, attempts to admit more
// than 100 replicas, and an API server audit log to check that two leaders never wrote in
// the same window.
import { type Client, createClient } from "../src/client/client.ts";
import {
  ApiError,
  ConnectionError,
  isAlreadyExists,
  isNotFound,
} from "../src/client/errors/api_error.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import type { KubeObject } from "../src/core/object.ts";
import type { Resource } from "../src/core/resource.ts";
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from "../testing.ts";
import { Widget } from "./fixtures/widget_operator.ts";
import { installOperator, mapConcurrent, reportLog, waitFor } from "./_helpers.ts";
import { type Exit, type ReplicaProgram, SupervisedReplica } from "./_supervised_replica.ts";

const FIXTURE = new URL("./fixtures/widget_operator.ts", import.meta.url).pathname;
const NS = "chaos";
/** README ("Leader election"): with the default Lease timings, outages up to this are safe. */
export const SAFE_OUTAGE_MS = 6_000;

/** What the scenario needs to know about the operator under test. */
export interface ChaosProfile {
  /** The custom resource the scenario creates and deletes, in namespace `chaos`. */
  resource: Resource<KubeObject & { status?: any; spec?: any }>;
  /** Path of the leader-election Lease. */
  lease: string;
  /** Options of the control plane. */
  controlPlane?: ControlPlaneOptions;
  /** Installs the operator (and whatever the replicas need) on a fresh control plane. */
  setup(cp: ControlPlane, admin: Client): Promise<void>;
  /** The kubeconfig and program of a replica. */
  replica(
    name: string,
    cp: ControlPlane,
  ): Promise<{ kubeconfig: string; program?: ReplicaProgram }>;
  /** Creates object `name`, the `i`-th. */
  create(admin: Client, name: string, i: number): Promise<void>;
  /** Whether an object was reconciled at least once (it carries the finalizer). */
  reconciled(obj: KubeObject & { status?: any }): boolean;
  /** What is not converged yet, or "" once every kept object is and no doomed one is left. */
  converged(admin: Client, kept: string[], doomed: string[]): Promise<string>;
  /** The `namespace/name` a replica's log line reports as finalized. */
  finalized(line: { json?: Record<string, any> }): string | undefined;
  /** Runs after the first API server restart. */
  midway?(say: (line: string) => void): Promise<void>;
  /** Checks and counts after convergence. */
  finish?(ctx: {
    admin: Client;
    kept: string[];
    doomed: string[];
    measure: (line: string) => void;
    problems: string[];
  }): Promise<void>;
  /** Releases what `setup` started. */
  close?(): Promise<void>;
}

/** The widget operator (issue 20's scenario). */
const widgetProfile: ChaosProfile = {
  resource: Widget,
  lease: "/apis/coordination.k8s.io/v1/namespaces/default/leases/widget-operator",
  async setup(cp) {
    await installOperator(FIXTURE, cp.kubeconfigPath);
  },
  replica: (_name, cp) => Promise.resolve({ kubeconfig: cp.kubeconfigPath }),
  async create(admin, name) {
    await admin.create(Widget, {
      metadata: { name, namespace: NS },
      spec: { size: 1 + (name.length % 3), color: "green" },
    });
  },
  reconciled: (w) => w.status?.phase === "Ready",
  async converged(admin, kept, doomed) {
    const widgets = (await admin.list(Widget, { namespace: NS })).items;
    const cms = new Map(
      (await admin.list(ConfigMap, { namespace: NS })).items.map((c) => [c.metadata.name, c]),
    );
    const present = new Set(widgets.map((w) => w.metadata.name));
    const lingering = doomed.filter((name) => present.has(name));
    const notReady = widgets.filter((w) =>
      !doomed.includes(w.metadata.name!) &&
      (w.status?.phase !== "Ready" ||
        cms.get(`${w.metadata.name}-config`)?.data?.size !== String(w.spec.size))
    );
    const missing = kept.filter((name) => !present.has(name));
    return notReady.length || lingering.length || missing.length
      ? `${notReady.length} not converged, ${lingering.length} deleted still present, ${missing.length} missing`
      : "";
  },
  finalized: (l) =>
    typeof l.json?.msg === "string" && l.json.msg.startsWith("Finalizing ")
      ? l.json.key as string
      : undefined,
};

/** Options of {@linkcode runChaos}. */
export interface ChaosOptions {
  /** Widgets created. */
  objects: number;
  /** Of those, how many are deleted once reconciled. */
  deletes: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /**
   * Extra flags for `run`, e.g. lease timings.
   * @default [] (the defaults: lease 15s, renew deadline 10s, retry period 2s)
   */
  runFlags?: string[];
  /**
   * The operator under test: issue 20's widget operator, or examples/myapp.ts with its
   * webhooks (issue 14; see tests/_chaos_myapp.ts).
   * @default "widget"
   */
  operator?: "widget" | "myapp";
}

/** What {@linkcode runChaos} measured and found. */
export interface ChaosReport {
  objects: number;
  deletes: number;
  /** Exits that were followed by a restart (the final stop is not counted). */
  restarts: Exit[];
  /** The API server outages, from the stop's start until ready (ms since the start). */
  outages: { label: string; startMs: number; ms: number }[];
  /** Failed expectations; empty when the scenario passed. */
  problems: string[];
  /** Measured durations and counts, one per line, for the closing note. */
  measured: string[];
}

/** Retries `fn` while the API server is away (refused connections, 5xx, 429). */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let delay = 100;; delay = Math.min(delay * 2, 1_000)) {
    try {
      return await fn();
    } catch (err) {
      const away = err instanceof ConnectionError ||
        (err instanceof ApiError && (err.code >= 500 || err.code === 429));
      if (!away) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/**
 * Runs the scenario on its own control plane.
 *
 * @param options Sizes and a progress log.
 * @returns The report; `problems` lists what went wrong.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { say, measure, problems, measured } = reportLog(options.log);
  const n = options.objects;
  const names = Array.from({ length: n }, (_, i) => `w${i}`);
  const doomed = names.slice(0, options.deletes);
  const kept = names.slice(options.deletes);

  const profile = options.operator === "myapp"
    ? (await import("./_chaos_myapp.ts")).myappProfile()
    : widgetProfile;
  const Kind = profile.resource;
  const LEASE = profile.lease;
  await using cp = await startControlPlane(profile.controlPlane);
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  await admin.create(Namespace, { metadata: { name: NS } });
  await profile.setup(cp, admin);

  const t0 = Date.now();
  /** Each API server outage: from the stop's start until it is ready again. */
  const outages: { label: string; startMs: number; ms: number }[] = [];
  const since = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  const replicas = await Promise.all(["a", "b"].map(async (name) => {
    const { kubeconfig, program } = await profile.replica(name, cp);
    return new SupervisedReplica(name, kubeconfig, options.runFlags ?? [], t0, program);
  }));
  for (const r of replicas) r.start();
  const holder = async () => (await cp.request("GET", LEASE)).body?.spec?.holderIdentity;
  /** The replica whose running process holds the Lease. */
  const leaderReplica = async () => {
    const id = await holder();
    // No Lease yet is no leader (not the first replica whose identity is not logged yet).
    if (!id) return undefined;
    return replicas.find((r) => r.current && !r.current.exited && r.current.identity === id);
  };
  try {
    await waitFor(leaderReplica, { what: "a replica to lead", timeoutMs: 60_000 });
    say(`${since()} ${(await leaderReplica())!.name} leads`);

    // Creation, in the background, retried while the API server is away.
    let created = 0;
    const creating = mapConcurrent(names, 4, async (name, i) => {
      await retrying(async () => {
        try {
          await profile.create(admin, name, i);
        } catch (err) {
          if (!isAlreadyExists(err)) throw err; // an earlier try went through
        }
      });
      created++;
    });
    creating.catch(() => {});

    const restartApiServer = async (label: string, crash: boolean) => {
      const started = Date.now();
      await cp.stopApiServer({ crash });
      const stopped = Date.now();
      await cp.startApiServer();
      outages.push({ label, startMs: started - t0, ms: Date.now() - started });
      measure(
        `${label}: API server stopped in ${stopped - started} ms and ready again ${
          Date.now() - stopped
        } ms later, at ${since()} with ${created}/${n} created`,
      );
    };

    await waitFor(() => created >= n / 3, { what: "a third created", timeoutMs: 120_000 });
    await restartApiServer("API server restart 1 (a crash: SIGKILL, then start)", true);
    await profile.midway?.((line) => say(`${since()} ${line}`));

    await waitFor(() => created >= (2 * n) / 3, { what: "two thirds created", timeoutMs: 120_000 });
    // The Widgets to delete must carry the finalizer: wait until they were reconciled.
    await waitFor(async () => {
      const list = await retrying(() => admin.list(Kind, { namespace: NS }));
      const ready = new Set(
        list.items.filter((w) => profile.reconciled(w)).map((w) => w.metadata.name),
      );
      return doomed.every((name) => ready.has(name));
    }, {
      what: `the ${doomed.length} ${Kind.kind}s to delete to be reconciled`,
      timeoutMs: 300_000,
    });
    const revision = await cp.compactEtcd();
    say(`${since()} etcd compacted to revision ${revision}`);
    // The leader may have lost the Lease in the first restart (when it outlasted the renew
    // deadline) and be campaigning again: kill whichever process leads next.
    const leader = await waitFor(leaderReplica, { what: "a leader to kill", timeoutMs: 120_000 });
    const killed = leader.current;
    killed?.kill("SIGKILL");
    const killedAt = Date.now();
    say(`${since()} SIGKILL to the leader ${leader.name}`);
    await restartApiServer(
      "API server restart 2 (graceful: SIGTERM, drained, then start; right after the SIGKILL)",
      false,
    );

    // Delete them while the Lease is still the dead leader's: no replica leads until it
    // expires, and the new leader finds them terminating.
    await mapConcurrent(doomed, 4, (name) =>
      retrying(async () => {
        try {
          await admin.delete(Kind, name, { namespace: NS });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }));
    const holderAtDelete = await holder();
    say(
      `${since()} ${doomed.length} ${Kind.kind}s deleted; the Lease names ${
        holderAtDelete === killed?.identity ? "the killed leader still" : "a live replica already"
      }`,
    );
    await creating;
    say(`${since()} all ${n} ${Kind.kind}s created`);

    const newLeader = await waitFor(async () => {
      const r = await leaderReplica();
      return r?.current !== killed ? r : undefined;
    }, { what: "a new leader", timeoutMs: 120_000 });
    const acquired = newLeader.current?.logged("Acquired lease")[0]?.at;
    if (acquired) {
      measure(
        `leader takeover: ${newLeader.name} acquired the Lease ${
          acquired - killedAt
        } ms after the SIGKILL`,
      );
    }

    // Convergence, read from the API server.
    let last = "";
    const converged = async () => {
      last = await profile.converged(admin, kept, doomed);
      return last === "";
    };
    try {
      await waitFor(converged, {
        what: "convergence",
        timeoutMs: 180_000 + n * 200,
        intervalMs: 500,
      });
      measure(
        `converged: ${kept.length} ${Kind.kind}s converged, ${doomed.length} deleted, at ${since()}`,
      );
    } catch (err) {
      problems.push(`${(err as Error).message} (${last})`);
    }

    // Every deleted Widget's finalizer ran, by some replica's log.
    const finalized = new Set(
      replicas.flatMap((r) => r.lines()).map((l) => profile.finalized(l)).filter(Boolean),
    );
    const unfinalized = doomed.filter((name) => !finalized.has(`${NS}/${name}`));
    if (unfinalized.length) {
      // What each replica logged about them, and what the API server holds: enough to tell a
      // missed event from a reconcile that never ended.
      for (const name of unfinalized.slice(0, 3)) {
        const key = `${NS}/${name}`;
        for (const r of replicas) {
          for (const l of r.lines().filter((l) => l.raw.includes(`"${key}"`))) {
            say(`  ${name} (${r.name}): ${l.raw}`);
          }
        }
        const w = await admin.get(Kind, name, { namespace: NS }).catch((e) => String(e));
        say(`  ${name} now: ${typeof w === "string" ? w : JSON.stringify(w.metadata)}`);
      }
      problems.push(
        `${unfinalized.length} deleted ${Kind.kind}s were never finalized: ${
          unfinalized.slice(0, 5)
        }`,
      );
    }
    measure(
      `finalizers: ${
        doomed.length - unfinalized.length
      }/${doomed.length} deleted ${Kind.kind}s finalized`,
    );

    // Start-up waits: replicas that came up while the API server was away and waited.
    const waited = replicas.flatMap((r) =>
      r.instances.flatMap((inst, i) =>
        inst.logged("The Kubernetes API server answered after").map((l) =>
          `${r.name}#${i + 1} waited ${l.json?.waitedMs} ms`
        )
      )
    );
    measure(`start-up waits for the API server: ${waited.length ? waited.join(", ") : "none"}`);
    await profile.finish?.({ admin, kept, doomed, measure, problems });
  } finally {
    await profile.close?.();
    for (const r of replicas) {
      const code = await r.stop();
      if (code !== 0) problems.push(`replica ${r.name} exited ${code} on SIGTERM at the end`);
    }
  }

  const restarts = replicas.flatMap((r) => r.exits).sort((x, y) => x.atMs - y.atMs);
  if (problems.length) {
    for (const r of replicas) {
      r.instances.forEach((inst, i) =>
        say(
          `--- ${r.name}#${i + 1} (last lines)\n${
            inst.lines.slice(-12).map((l) => l.raw).join("\n")
          }`,
        )
      );
    }
  }
  for (const e of restarts.filter((e) => e.kind === "unexpected")) {
    problems.push(`replica ${e.replica} (instance ${e.instance}) ${e.reason}`);
  }
  // README: with the default timings "outages up to about 6 s are always safe". A Lease loss
  // is allowed only when an outage longer than that started before it (and ended at most a
  // lease duration before it); after shorter outages alone it is a problem.
  for (const e of restarts.filter((e) => e.kind === "lease-lost")) {
    const cause = outages.find((o) =>
      o.startMs <= e.atMs && o.ms > SAFE_OUTAGE_MS && e.atMs <= o.startMs + o.ms + 20_000
    );
    if (!cause) {
      problems.push(
        `replica ${e.replica} (instance ${e.instance}) lost its Lease at ${e.atMs} ms, not in ` +
          `the 20 s after an outage longer than the ${SAFE_OUTAGE_MS} ms the README calls ` +
          `always safe (outages: ${
            outages.map((o) => `${o.ms} ms from ${o.startMs} ms`).join(", ")
          }): ${e.reason}`,
      );
    }
  }
  const safe = outages.filter((o) => o.ms <= SAFE_OUTAGE_MS);
  measure(
    `outages: ${
      outages.map((o) => `${o.label.split(" (")[0]} ${o.ms} ms`).join(", ")
    }; ${safe.length} within the ${SAFE_OUTAGE_MS} ms the README calls always safe, so no Lease loss was allowed after ${
      safe.length === outages.length ? "any of them" : "those alone"
    }`,
  );
  measure(
    `restarts: ${restarts.length} (${
      restarts.map((e) =>
        `${e.replica}#${e.instance} at ${(e.atMs / 1000).toFixed(1)}s: ${e.reason}`
      )
        .join("; ") || "none"
    })`,
  );
  return { objects: n, deletes: options.deletes, restarts, outages, problems, measured };
}
