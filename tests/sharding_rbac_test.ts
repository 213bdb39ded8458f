// The sharded operator under the RBAC it generates, against a real API server: the test
// operator's `manifests` (tests/fixtures/shard_operator.ts) applied, CRD, ServiceAccount,
// ClusterRole and the Leases' Role with their bindings; then replicas that authenticate as
// that ServiceAccount (nothing more: no system:masters) and run as the Deployment runs them,
// POD_NAMESPACE and POD_NAME set. They must join, split the shards, reconcile every object and
// be refused nothing. Also shown here, each documented in `run --help` or the README:
//
// - the identity is POD_NAME, or --shard-identity when given (the member Leases' names);
// - a third replica joining rebalances the shards, and the sharding metrics say so:
//   kubeno_shard_members, kubeno_shard_owned, kubeno_shard_handoffs_total (acquired and
//   released), kubeno_shard_drain_seconds, kubeno_shard_received_total,
//   kubeno_shard_queue_depth;
// - a replica whose member Lease is deleted exits 1 ("Lost sharding membership");
// - with helm at hand, the sharded chart's default values render what `manifests` prints.
//
// One control plane; fast Lease timings (as tests/_sharding.ts), so the file takes well under
// a minute.
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { Lease } from "../src/core/kinds_cluster.ts";
import type { KubeObject } from "../src/core/object.ts";
import { startControlPlane } from "../testing.ts";
import { fromYaml } from "../src/util/yaml.ts";
import { freePort } from "../src/testing/process.ts";
import { Shardwork } from "./fixtures/shard_operator.ts";
import { findHelm } from "./_helm.ts";
import { mapConcurrent, waitFor } from "./_helpers.ts";
import { sample } from "./_sharding.ts";

const FIXTURE = new URL("./fixtures/shard_operator.ts", import.meta.url).pathname;
const NAME = "shard-operator";
const NS = `${NAME}-system`;
const SA_USER = `system:serviceaccount:${NS}:${NAME}`;
const SHARDS = 12;
const TIMINGS = [
  "--shard-lease-duration=4s",
  "--shard-renew-deadline=3s",
  "--shard-retry-period=500ms",
];
const dec = new TextDecoder();

async function program(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", FIXTURE, ...args],
    env: { NO_COLOR: "1", POD_NAMESPACE: "", WATCH_NAMESPACE: "", KUBECONFIG: "/nonexistent" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A replica as the Deployment runs it: `run`, POD_NAMESPACE and POD_NAME from the pod. */
class Replica {
  readonly proc: Deno.ChildProcess;
  readonly metricsPort = freePort();
  log = "";
  #pump: Promise<void>;
  exited?: Deno.CommandStatus;

  constructor(kubeconfig: string, podName: string, extra: string[] = []) {
    const proc = new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", "--quiet", FIXTURE, "run", `--kubeconfig=${kubeconfig}`, ...TIMINGS],
        `--metrics-bind-address=127.0.0.1:${this.metricsPort}`,
        "--metrics-secure=false",
        "--health-probe-bind-address=0",
        ...extra,
      ],
      env: {
        NO_COLOR: "1",
        KUBECONFIG: "/nonexistent",
        POD_NAMESPACE: NS,
        POD_NAME: podName,
        WATCH_NAMESPACE: "",
      },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.proc = proc;
    proc.status.then((s) => this.exited = s);
    this.#pump = (async () => {
      for await (const c of proc.stderr.pipeThrough(new TextDecoderStream())) this.log += c;
    })();
  }

  async metrics(): Promise<string> {
    return await (await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`)).text();
  }

  /** Resolves once the process has exited and its last log lines have been read. */
  async exit(): Promise<Deno.CommandStatus> {
    const status = await this.proc.status;
    await this.#pump.catch(() => {});
    return status;
  }

  async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
    if (!this.exited) {
      try {
        this.proc.kill(signal);
      } catch { /* exited */ }
    }
    return await this.exit();
  }
}

Deno.test("sharded replicas under the generated RBAC: POD_NAME identities, rebalancing, metrics, a deleted member Lease", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  const manifests = await program(["manifests"]);
  assert.equal(manifests.code, 0, manifests.stderr);
  const objects = fromYaml(manifests.stdout) as KubeObject[];
  // Everything but the Deployment (its pod would not run here: the replicas below are it).
  const dir = await Deno.makeTempDir({ prefix: "kubeno-sharding-rbac-" });
  const applied = objects.filter((o) => o.kind !== "Deployment");
  await Deno.writeTextFile(
    `${dir}/rbac.json`,
    JSON.stringify({ kind: "List", apiVersion: "v1", items: applied }),
  );
  const apply = await cp.kubectl("apply", "--server-side", "-f", `${dir}/rbac.json`);
  assert.equal(apply.code, 0, apply.stderr);
  assert.deepEqual(
    applied.map((o) => o.kind).filter((k) => k === "Role" || k === "ClusterRole").sort(),
    ["ClusterRole", "ClusterRole", "ClusterRole", "Role"],
  );
  await waitFor(() => admin.list(Shardwork, { limit: 1 }).then(() => true), {
    what: "shardworks to be served",
  });
  // The ServiceAccount's identity and nothing else: not an admin.
  const kubeconfig = await cp.writeKubeconfig({
    user: SA_USER,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`],
  });
  const asSa = await cp.kubectl(
    "auth",
    "can-i",
    "create",
    "leases",
    "-n",
    "default",
    `--as=${SA_USER}`,
  );
  assert.equal(asSa.stdout.trim(), "no", "the ServiceAccount may not write Leases elsewhere");

  const names = ["alpha", "beta", "gamma"].flatMap((ns) =>
    Array.from({ length: 10 }, (_, i) => ({ namespace: `rbac-${ns}`, name: `w${i}` }))
  );
  for (const ns of new Set(names.map((n) => n.namespace))) {
    await admin.create(Namespace, { metadata: { name: ns } });
  }
  await mapConcurrent(
    names,
    8,
    (o) => admin.create(Shardwork, { metadata: o, spec: { value: 1 } }).then(() => {}),
  );

  const replicas: Replica[] = [];
  const memberLeases = async () =>
    (await admin.list(Lease, {
      namespace: NS,
      labelSelector: `shards.kubeno.dev/of=${NAME},shards.kubeno.dev/role=member`,
    })).items.map((l) => l.metadata.name!).sort();
  const holders = async () => {
    const list = await admin.list(Lease, {
      namespace: NS,
      labelSelector: `shards.kubeno.dev/of=${NAME},shards.kubeno.dev/role=shard`,
    });
    return list.items.map((l) => l.spec?.holderIdentity ?? "");
  };
  const converged = (value: number) =>
    waitFor(async () => {
      const list = await admin.list(Shardwork, {});
      return list.items.length === names.length &&
        list.items.every((w) => w.status?.observed === value);
    }, { what: `every Shardwork to observe ${value}`, timeoutMs: 60_000 });
  const count = (hs: string[], id: string) => hs.filter((h) => h === id).length;

  try {
    await t.step(
      "two replicas, identities from POD_NAME, split the shards and reconcile all",
      async () => {
        replicas.push(new Replica(kubeconfig, `${NAME}-7d9f-a`));
        replicas.push(new Replica(kubeconfig, `${NAME}-7d9f-b`));
        await converged(1);
        await waitFor(async () => {
          const hs = await holders();
          return hs.length === SHARDS && count(hs, `${NAME}-7d9f-a`) === 6 &&
            count(hs, `${NAME}-7d9f-b`) === 6;
        }, { what: "6 shards each, held by the POD_NAME identities" });
        assert.deepEqual(await memberLeases(), [
          `${NAME}-member-${NAME}-7d9f-a`,
          `${NAME}-member-${NAME}-7d9f-b`,
        ]);
      },
    );

    await t.step(
      "a third replica with --shard-identity joins; shards rebalance to 4 each",
      async () => {
        replicas.push(new Replica(kubeconfig, `${NAME}-7d9f-c`, ["--shard-identity=third"]));
        await waitFor(async () => {
          const hs = await holders();
          return count(hs, `${NAME}-7d9f-a`) === 4 && count(hs, `${NAME}-7d9f-b`) === 4 &&
            count(hs, "third") === 4;
        }, { what: "4 shards each, the third as 'third' (not its POD_NAME)", timeoutMs: 60_000 });
        assert.ok((await memberLeases()).includes(`${NAME}-member-third`));
        await mapConcurrent(
          names,
          8,
          (o) =>
            admin.patch(Shardwork, o.name, { spec: { value: 2 } }, { namespace: o.namespace })
              .then(() => {}),
        );
        await converged(2);
      },
    );

    await t.step("the sharding metrics say what happened", async () => {
      const [a, , c] = replicas;
      await waitFor(async () => sample(await a.metrics(), "kubeno_shard_members") === 3, {
        what: "replica a to count 3 members",
      });
      const am = await a.metrics();
      const cm = await c.metrics();
      assert.equal(sample(am, "kubeno_shard_owned"), 4, "a owns 4 shards");
      assert.equal(sample(cm, "kubeno_shard_owned"), 4, "the third owns 4 shards");
      // How many a took and gave back depends on who joined first; at least the 2 it gave the
      // third, each released only after its drain was measured.
      const released = sample(am, "kubeno_shard_handoffs_total", { kind: "released" });
      assert.ok(released >= 2, `a released ${released}`);
      assert.ok(sample(am, "kubeno_shard_handoffs_total", { kind: "acquired" }) >= 4);
      assert.equal(sample(am, "kubeno_shard_drain_seconds_count"), released, "a drain per release");
      assert.equal(sample(cm, "kubeno_shard_handoffs_total", { kind: "released" }), 0);
      assert.ok(sample(cm, "kubeno_shard_handoffs_total", { kind: "acquired" }) >= 4);
      // The server filtered: nothing received was dropped on the client.
      assert.ok(sample(am, "kubeno_shard_received_total", { result: "kept" }) > 0);
      assert.equal(sample(am, "kubeno_shard_received_total", { result: "dropped" }), 0);
      assert.equal(sample(cm, "kubeno_shard_received_total", { result: "dropped" }), 0);
      // Nothing waits: every owned shard's queue is empty, and is reported.
      assert.match(am, /^kubeno_shard_queue_depth\{controller="shardwork",shard="\d+"\} 0$/m);
      assert.equal(sample(am, "kubeno_shard_queue_depth"), 0);
      console.log(
        `a: ${
          am.split("\n").filter((l) =>
            /^kubeno_shard_(members|handoffs_total|drain_seconds_(count|sum)|received_total) /.test(
              l,
            ) || /^kubeno_shard_(handoffs|received)_total\{/.test(l)
          ).join("; ")
        }`,
      );
    });

    await t.step("a replica whose member Lease is deleted exits 1", async () => {
      const b = replicas[1];
      await admin.delete(Lease, `${NAME}-member-${NAME}-7d9f-b`, { namespace: NS });
      const status = await b.exit();
      assert.equal(status.code, 1, b.log.split("\n").slice(-10).join("\n"));
      assert.match(b.log, /Lost sharding membership/);
      // The others take its shards and the work goes on.
      await waitFor(async () => {
        const hs = await holders();
        return count(hs, `${NAME}-7d9f-a`) + count(hs, "third") === SHARDS;
      }, { what: "the two left to hold every shard", timeoutMs: 60_000 });
      await mapConcurrent(
        names,
        8,
        (o) =>
          admin.patch(Shardwork, o.name, { spec: { value: 3 } }, { namespace: o.namespace })
            .then(() => {}),
      );
      await converged(3);
    });

    await t.step("SIGTERM: the replicas left drain and exit 0", async () => {
      for (const r of [replicas[0], replicas[2]]) {
        const status = await r.stop("SIGTERM");
        assert.equal(status.code, 0, r.log.split("\n").slice(-10).join("\n"));
      }
      // Leaving deletes the member Lease and frees the shards.
      assert.deepEqual(await memberLeases(), []);
      assert.deepEqual(await holders(), Array(SHARDS).fill(""));
    });
    await t.step("nothing was refused: no Forbidden in any replica's log", () => {
      for (const r of replicas) {
        assert.doesNotMatch(r.log, /forbidden|Forbidden/, r.log.split("\n").slice(-10).join("\n"));
      }
    });
  } finally {
    for (const r of replicas) await r.stop("SIGKILL").catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

const helm = await findHelm();

Deno.test({
  name: `the sharded operator's Helm chart renders with default values what manifests prints${
    helm.path ? "" : ` (skipped: ${helm.reason})`
  }`,
  ignore: !helm.path,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "kubeno-sharding-chart-" });
    try {
      const written = await program(["manifests", "--helm", `${dir}/chart`]);
      assert.equal(written.code, 0, written.stderr);
      const template = await new Deno.Command(helm.path!, {
        args: ["template", NAME, `${dir}/chart`, "--namespace", NS, "--include-crds"],
        env: {
          HELM_CACHE_HOME: `${dir}/helm/cache`,
          HELM_CONFIG_HOME: `${dir}/helm/config`,
          HELM_DATA_HOME: `${dir}/helm/data`,
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(template.code, 0, dec.decode(template.stderr));
      const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
      const rendered = new Map(
        (fromYaml(dec.decode(template.stdout)) as KubeObject[]).map((o) => [key(o), o]),
      );
      const printed = (fromYaml((await program(["manifests"])).stdout) as KubeObject[])
        .filter((o) => o.kind !== "Namespace");
      assert.deepEqual([...rendered.keys()].sort(), printed.map(key).sort());
      for (const o of printed) {
        assert.ok(isDeepStrictEqual(rendered.get(key(o)), o), `${key(o)} differs`);
      }
      // The sharded defaults: 3 replicas, POD_NAME for the identity, the Leases' Role.
      // deno-lint-ignore no-explicit-any
      const dep = rendered.get(`Deployment/${NS}/${NAME}`) as any;
      assert.equal(dep.spec.replicas, 3);
      assert.ok(
        // deno-lint-ignore no-explicit-any
        dep.spec.template.spec.containers[0].env.some((e: any) =>
          e.name === "POD_NAME" && e.valueFrom?.fieldRef?.fieldPath === "metadata.name"
        ),
      );
      assert.ok(rendered.has(`Role/${NS}/${NAME}-leader-election`));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
