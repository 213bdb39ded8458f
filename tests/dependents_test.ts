// Dependent resources on a real control plane with workloads (controller-manager, scheduler,
// kwok nodes), with examples/webapp.ts's controller: ConfigMap → Deployment → Service →
// Ingress (the Ingress only while spec.host is set).
//
// 1. Order behind readiness gates: with the nodes cordoned the Deployment cannot become
//    ready, and the Service is not applied; once uncordoned, the Service follows the
//    Deployment's readiness event. Order is read from the etcd revisions (resourceVersions)
//    of the watch events: the Service's creation comes after the Deployment event that
//    first showed its replicas ready.
// 2. Steady state: no API write, counted from the API server's apiserver_request_total.
// 3. Pruning: removing spec.host deletes the Ingress and nothing else.
// 4. Ordered deletion: deleting the Webapp deletes Ingress, Service, Deployment, ConfigMap in
//    that order (etcd revisions of the DELETED events), then the Webapp.
// 5. With the child watches 1.5 s late (the lag proxy), no child is created twice and none is
//    pruned by mistake.
// 6. The ApplySet id is kubectl's: kubectl's own `--applyset` labels a parent the same.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { startLagProxy } from "../src/testing/lag_proxy.ts";
import { type Client, createClient, type RequestMetric } from "../src/client/client.ts";
import { ConfigMap, Node, Service } from "../src/core/kinds.ts";
import { Deployment } from "../src/core/kinds_workloads.ts";
import { Ingress } from "../src/core/api/networking/v1.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import type { KubeObject } from "../src/core/object.ts";
import type { Resource } from "../src/core/resource.ts";
import { isNotFound } from "../src/client/errors/api_error.ts";
import {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_PART_OF_LABEL,
  applySetId,
} from "../src/core/applyset.ts";
import { builtinReady } from "../src/core/readiness.ts";
import { deriveRbac } from "../src/deploy/rbac.ts";
import { controller, Webapp, type WebappObject } from "../examples/webapp.ts";
import { waitFor } from "./_helpers.ts";
import { createNamespace, runObserved } from "./_stack.ts";

const KINDS: readonly Resource<any>[] = [ConfigMap, Deployment, Service, Ingress];
const WRITE_VERBS = new Set(["POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"]);
const OURS = new Set(["webapps", "configmaps", "deployments", "services", "ingresses"]);

/** One watch event on a child, with the etcd revision it happened at. */
interface Seen {
  kind: string;
  type: string;
  name: string;
  uid: string;
  rv: number;
  at: number;
  object: KubeObject;
}

/** Records every event on the Webapp children of `ns` (those with the ApplySet label). */
function recordChildren(client: Client, ns: string) {
  const events: Seen[] = [];
  const stop = new AbortController();
  let open = 0;
  for (const res of KINDS) {
    (async () => {
      const stream = client.watchEvents(res, {
        namespace: ns,
        labelSelector: APPLYSET_PART_OF_LABEL,
        signal: stop.signal,
      });
      open++;
      for await (const ev of stream) {
        if (ev.type === "ERROR" || ev.type === "BOOKMARK") continue;
        const m = ev.object.metadata;
        events.push({
          kind: res.kind,
          type: ev.type,
          name: m.name!,
          uid: m.uid!,
          rv: Number(m.resourceVersion),
          at: performance.now(),
          object: ev.object,
        });
      }
    })().catch((e) => {
      if (!stop.signal.aborted) throw e;
    });
  }
  return {
    events,
    get open() {
      return open;
    },
    of: (kind: string, type: string) => events.filter((e) => e.kind === kind && e.type === type),
    [Symbol.dispose]: () => stop.abort(),
  };
}

/** The API server's write counts for the Webapp's kinds, by verb and resource. */
async function apiWrites(cp: { kubectl(...a: string[]): Promise<{ stdout: string }> }) {
  const { stdout } = await cp.kubectl("get", "--raw", "/metrics");
  let total = 0;
  const by: Record<string, number> = {};
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (!WRITE_VERBS.has(labels.verb) || !OURS.has(labels.resource)) continue;
    const n = Number(line.slice(line.lastIndexOf(" ") + 1));
    total += n;
    const k = `${labels.verb} ${labels.resource}${
      labels.subresource ? "/" + labels.subresource : ""
    }`;
    by[k] = (by[k] ?? 0) + n;
  }
  return { total, by };
}

/** Runs the example's controller in `ns` through `client`. */
const runController = (client: Client, ns: string) => runObserved(controller, client, ns);

const webapp = (ns: string, host?: string): WebappObject => ({
  apiVersion: Webapp.apiVersion,
  kind: Webapp.kind,
  metadata: { name: "shop", namespace: ns },
  spec: { image: "nginx", replicas: 2, greeting: "hello", ...(host ? { host } : {}) },
});

const get = <T extends KubeObject>(client: Client, res: Resource<T>, ns: string, name: string) =>
  client.get(res, name, { namespace: ns }).catch((e) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });

Deno.test("dependents: ordered apply behind readiness gates, pruning, ordered deletion", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  const writes: RequestMetric[] = [];
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  using client = await createClient({
    kubeconfig: cp.kubeconfigPath,
    onRequest: (m) => void (m.method !== "GET" && writes.push(m)),
  });
  await admin.create(CustomResourceDefinition, Webapp.crd());
  await waitFor(() => admin.list(Webapp, { limit: 1 }).then(() => true, () => false), {
    what: "webapps to be served",
  });
  const nodes = (await admin.list(Node)).items.map((n) => n.metadata.name!);
  const cordon = (unschedulable: boolean) =>
    Promise.all(nodes.map((n) => admin.patch(Node, n, { spec: { unschedulable } })));

  const ns = await createNamespace(admin, "webapp");
  using rec = recordChildren(admin, ns);
  await waitFor(() => rec.open === KINDS.length, { what: "the child watches to open" });
  await using run = await runController(client, ns);
  const status = async () => (await admin.get(Webapp, "shop", { namespace: ns })).status;

  await t.step("the declaration owns the graph's kinds: cache, watches, RBAC", () => {
    assert.deepEqual(controller.owns.map((k) => k.kind), [
      "ConfigMap",
      "Deployment",
      "Service",
      "Ingress",
    ]);
    assert.ok(controller.watches.some((w) => w.resource.kind === "EndpointSlice"));
    const rbac = deriveRbac([controller]);
    for (const r of ["configmaps", "deployments", "services", "ingresses"]) {
      const rule = rbac.cluster.find((x) => x.resources?.includes(r));
      assert.ok(rule?.verbs.includes("patch") && rule.verbs.includes("delete"), r);
    }
    assert.ok(rbac.cluster.some((x) => x.resources?.includes("endpointslices")));
  });

  await t.step(
    "1. a dependent waits for its dependencies to be ready, then follows at once",
    async () => {
      await cordon(true);
      await admin.create(Webapp, webapp(ns, "shop.example.com"));
      // The controller has seen the Deployment's status (observed, not ready) and says so.
      await waitFor(async () => {
        const d = await get(admin, Deployment, ns, "shop");
        const s = await status();
        return d?.status?.observedGeneration === d?.metadata.generation &&
          s?.dependents?.deployment === "notReady" && s.dependents.service === "waiting";
      }, { what: "the Deployment to be observed not ready", timeoutMs: 60_000 });
      assert.equal(await get(admin, Service, ns, "shop"), undefined, "no Service yet");
      assert.equal(await get(admin, Ingress, ns, "shop"), undefined, "no Ingress yet");
      const ready = (await status())?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "False");
      assert.match(
        ready?.message ?? "",
        /dependent "deployment" \(Deployment "shop"\) is not ready/,
      );

      await cordon(false);
      await waitFor(
        async () =>
          (await status())?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        { what: "the Webapp to be Ready", timeoutMs: 90_000 },
      );
      const added = (kind: string) => {
        const [e] = rec.of(kind, "ADDED");
        assert.ok(e, `${kind} added`);
        return e;
      };
      const deploymentReady = rec.of("Deployment", "MODIFIED").find((e) => builtinReady(e.object));
      assert.ok(deploymentReady, "a Deployment event shows it ready");
      const [cm, dep, svc, ing] = ["ConfigMap", "Deployment", "Service", "Ingress"].map(added);
      assert.ok(cm.rv < dep.rv, "the ConfigMap before the Deployment");
      assert.ok(deploymentReady.rv < svc.rv, "the Service only after the Deployment is ready");
      assert.ok(svc.rv < ing.rv, "the Ingress after the Service");
      const latency = svc.at - deploymentReady.at;
      const trigger = run.causes.filter((c) => c.at <= svc.at).at(-1);
      const byCause = Object.fromEntries(
        Object.entries(Object.groupBy(run.causes, (c) => c.cause)).map(([k, v]) => [k, v!.length]),
      );
      console.log(
        `Deployment ready (rv ${deploymentReady.rv}) → Service created (rv ${svc.rv}): ${
          latency.toFixed(0)
        } ms, queued by "${trigger?.cause}"; queue adds by cause: ${JSON.stringify(byCause)}`,
      );
      assert.ok(!run.causes.some((c) => c.cause === "requeue"), "no requeue: event-driven");

      // The ApplySet: the parent's id label and kinds, each child's part-of label.
      const app = await admin.get(Webapp, "shop", { namespace: ns });
      const id = await applySetId({
        name: "shop",
        namespace: ns,
        kind: "Webapp",
        group: Webapp.group,
      });
      assert.equal(app.metadata.labels?.[APPLYSET_ID_LABEL], id);
      assert.equal(
        app.metadata.annotations?.[APPLYSET_GROUP_KINDS_ANNOTATION],
        "ConfigMap,Deployment.apps,Ingress.networking.k8s.io,Service",
      );
      for (const e of [cm, dep, svc, ing]) {
        assert.equal(e.object.metadata.labels?.[APPLYSET_PART_OF_LABEL], id, e.kind);
      }
    },
  );

  await t.step("2. no API write in the steady state", async () => {
    await waitFor(() => run.idle(), { what: "the controller to be idle" });
    const before = await apiWrites(cp);
    const mine = writes.length;
    const reconciles = run.causes.length;
    // A change that is not one: the controller reconciles and must write nothing.
    await admin.patch(Webapp, "shop", { metadata: { annotations: { touched: "yes" } } }, {
      namespace: ns,
    });
    await waitFor(() => run.causes.length > reconciles && run.idle(), {
      what: "the touch to be reconciled",
    });
    await new Promise((r) => setTimeout(r, 10_000)); // the quiet period measured
    const after = await apiWrites(cp);
    const delta = Object.fromEntries(
      Object.entries(after.by).map(([k, v]) => [k, v - (before.by[k] ?? 0)]).filter(([, v]) => v),
    );
    console.log(
      `writes in 10 s of steady state: ${JSON.stringify(delta)}, by the controller: ${
        writes.length - mine
      }`,
    );
    assert.equal(writes.length - mine, 0, "the controller wrote nothing");
    assert.deepEqual(delta, { "PATCH webapps": 1 }, "only the test's own touch");
  });

  await t.step("3. removing spec.host prunes the Ingress, and only it", async () => {
    const uids = Object.fromEntries(
      await Promise.all(
        ([ConfigMap, Deployment, Service] as Resource<KubeObject>[]).map(async (
          k,
        ) => [
          k.kind,
          (await get(admin, k, ns, k === ConfigMap ? "shop-config" : "shop"))!.metadata.uid,
        ]),
      ),
    );
    const from = rec.events.length;
    await admin.patch(Webapp, "shop", { spec: { host: null } } as any, { namespace: ns });
    await waitFor(async () => !(await get(admin, Ingress, ns, "shop")), {
      what: "the Ingress to be pruned",
    });
    await waitFor(
      async () =>
        ["pruned", "absent"].includes((await status())?.dependents?.ingress ?? "") && run.idle(),
      {
        what: "the Webapp to report the Ingress pruned",
      },
    );
    const deleted = rec.events.slice(from).filter((e) => e.type === "DELETED");
    assert.deepEqual(deleted.map((e) => `${e.kind}/${e.name}`), ["Ingress/shop"]);
    for (const k of [ConfigMap, Deployment, Service] as Resource<KubeObject>[]) {
      const obj = await get(admin, k, ns, k === ConfigMap ? "shop-config" : "shop");
      assert.equal(obj?.metadata.uid, uids[k.kind], `${k.kind} untouched`);
    }
    assert.ok((await status())?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
  });

  await t.step(
    "4. deleting the Webapp deletes Ingress, Service, Deployment, ConfigMap in order",
    async () => {
      await admin.patch(Webapp, "shop", { spec: { host: "shop.example.com" } }, { namespace: ns });
      await waitFor(async () => !!(await get(admin, Ingress, ns, "shop")), {
        what: "the Ingress to be back",
        timeoutMs: 60_000,
      });
      const from = rec.events.length;
      await admin.delete(Webapp, "shop", { namespace: ns });
      await waitFor(async () => !(await get(admin, Webapp, ns, "shop")), {
        what: "the Webapp to be gone",
        timeoutMs: 120_000,
      });
      const deleted = rec.events.slice(from).filter((e) => e.type === "DELETED")
        .sort((a, b) => a.rv - b.rv);
      assert.deepEqual(
        deleted.map((e) => e.kind),
        ["Ingress", "Service", "Deployment", "ConfigMap"],
        JSON.stringify(deleted.map((e) => [e.kind, e.rv])),
      );
    },
  );

  await t.step(
    "5. with the child watches 1.5 s late, no child is created twice or pruned by mistake",
    async () => {
      await using proxy = await startLagProxy({ kubeconfig: cp.kubeconfigPath });
      for (
        const [group, resource] of [
          ["", "configmaps"],
          ["apps", "deployments"],
          ["", "services"],
          ["networking.k8s.io", "ingresses"],
          ["discovery.k8s.io", "endpointslices"],
        ]
      ) proxy.delay({ group, resource }, 1_500);
      const failures: RequestMetric[] = [];
      let deletes = 0;
      using lagging = await createClient({
        kubeconfig: proxy.kubeconfigPath,
        onRequest: (m) => {
          if (m.code >= 400) failures.push(m);
          if (m.method === "DELETE") deletes++;
        },
      });
      const lns = await createNamespace(admin, "webapp-lag");
      using lrec = recordChildren(admin, lns);
      await waitFor(() => lrec.open === KINDS.length, { what: "the child watches to open" });
      await using lrun = await runController(lagging, lns);
      const lstatus = async () => (await admin.get(Webapp, "shop", { namespace: lns })).status;
      await admin.create(Webapp, webapp(lns, "shop.example.com"));
      await waitFor(
        async () =>
          (await lstatus())?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        { what: "the lagging Webapp to be Ready", timeoutMs: 90_000 },
      );
      // Changes in a row while the cache lags the controller's own writes.
      for (const [greeting, replicas] of [["a", 3], ["b", 2], ["c", 3]] as const) {
        await admin.patch(Webapp, "shop", { spec: { greeting, replicas } }, { namespace: lns });
      }
      await admin.patch(Webapp, "shop", { spec: { host: null } } as any, { namespace: lns });
      await waitFor(async () => {
        const s = await lstatus();
        const cm = await get(admin, ConfigMap, lns, "shop-config");
        return ["pruned", "absent"].includes(s?.dependents?.ingress ?? "") &&
          cm?.data?.["index.html"]?.includes("c") &&
          s?.conditions?.some((c) => c.type === "Ready" && c.status === "True") && lrun.idle();
      }, { what: "the lagging Webapp to settle", timeoutMs: 90_000 }).catch(async (e) => {
        console.log(JSON.stringify(await lstatus()), lrun.idle());
        throw e;
      });
      const count = (type: string) =>
        Object.groupBy(lrec.events.filter((e) => e.type === type), (e) => `${e.kind}/${e.name}`);
      const added = Object.fromEntries(
        Object.entries(count("ADDED")).map(([k, v]) => [k, v!.length]),
      );
      const deleted = Object.fromEntries(
        Object.entries(count("DELETED")).map(([k, v]) => [k, v!.length]),
      );
      console.log(
        `lagging: created ${JSON.stringify(added)}, deleted ${
          JSON.stringify(deleted)
        }, failed requests ${failures.length}, DELETE requests ${deletes}`,
      );
      assert.deepEqual(added, {
        "ConfigMap/shop-config": 1,
        "Deployment/shop": 1,
        "Service/shop": 1,
        "Ingress/shop": 1,
      });
      assert.deepEqual(deleted, { "Ingress/shop": 1 });
      assert.deepEqual(
        failures.filter((f) => f.method !== "GET"),
        [],
        "no write refused (409, 404)",
      );
      assert.equal(deletes, 1, "one DELETE request: the Ingress, never again while the cache lags");
    },
  );

  await t.step("6. the ApplySet id is the one kubectl computes", async () => {
    const ans = await createNamespace(admin, "applyset");
    const file = await Deno.makeTempFile({ suffix: ".yaml" });
    await Deno.writeTextFile(
      file,
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: member\n  namespace: ${ans}\ndata: {a: "1"}\n`,
    );
    // kubectl's ApplySet support is still behind this environment variable.
    Deno.env.set("KUBECTL_APPLYSET", "true");
    const out = await cp.kubectl(
      ...["apply", "-n", ans, "--prune", "--applyset=configmaps/parent", "-f", file],
    ).finally(() => {
      Deno.env.delete("KUBECTL_APPLYSET");
      return Deno.remove(file);
    });
    assert.equal(out.code, 0, out.stderr);
    const parent = await admin.get(ConfigMap, "parent", { namespace: ans });
    const id = await applySetId({ name: "parent", namespace: ans, kind: "ConfigMap", group: "" });
    assert.equal(parent.metadata.labels?.[APPLYSET_ID_LABEL], id);
    const member = await admin.get(ConfigMap, "member", { namespace: ans });
    assert.equal(member.metadata.labels?.[APPLYSET_PART_OF_LABEL], id);
  });
});
