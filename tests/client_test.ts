// kubeno's client against a real kube-apiserver + etcd on loopback (one per file): every
// operation, what it sends (field manager, dry run, force, delete options) as the server
// shows it, errors, and watches the server itself counts as closed.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import {
  ApiError,
  ConnectionError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isInvalid,
  isNotFound,
} from "../src/client/errors/api_error.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { KubeconfigError } from "../src/client/kubeconfig/kubeconfig_error.ts";
import {
  ConfigMap,
  Event,
  Namespace,
  Node,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from "../src/core/kinds.ts";
import {
  DaemonSet,
  Deployment,
  Job,
  ReplicaSet,
  StatefulSet,
} from "../src/core/kinds_workloads.ts";
import {
  ClusterRole,
  ClusterRoleBinding,
  CustomResourceDefinition,
  EventsV1Event,
  Lease,
  MutatingWebhookConfiguration,
  Role,
  RoleBinding,
  ValidatingWebhookConfiguration,
} from "../src/core/kinds_cluster.ts";
import type { KubeObject } from "../src/core/object.ts";
import { resource } from "../src/core/resource.ts";
import { serverWatches, untilEvery, webDeploymentSpec } from "./_helpers.ts";

/** `waitFor` with the description first, polling every 50 ms. */
const until = untilEvery(50);

interface Widget extends KubeObject {
  spec?: { size?: number; color?: string };
  status?: { phase?: string; observed?: number };
}
const Widget = resource<Widget>({ group: "test.kubeno.dev", version: "v1", kind: "Widget" });

async function installWidgetCrd(client: Client): Promise<void> {
  await client.create(CustomResourceDefinition, {
    metadata: { name: "widgets.test.kubeno.dev" },
    spec: {
      group: "test.kubeno.dev",
      names: { kind: "Widget", plural: "widgets", singular: "widget", listKind: "WidgetList" },
      scope: "Namespaced",
      versions: [{
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                properties: { size: { type: "integer" }, color: { type: "string" } },
              },
              status: {
                type: "object",
                properties: { phase: { type: "string" }, observed: { type: "integer" } },
              },
            },
          },
        },
      }],
    },
  });
  // Watch the CRD until Established, with a deadline.
  const signal = AbortSignal.timeout(30_000);
  for await (
    const ev of client.watchEvents(CustomResourceDefinition, {
      fieldSelector: "metadata.name=widgets.test.kubeno.dev",
      signal,
    })
  ) {
    if (ev.type === "ERROR") throw new Error(`watch error: ${ev.object.message}`);
    const established = ev.object.status?.conditions?.some((c) =>
      c.type === "Established" && c.status === "True"
    );
    if (established) break;
  }
  // Discovery can lag Established by a moment: wait until the resource is served.
  await until("widgets to be served", async () => {
    await client.list(Widget, { namespace: "default", limit: 1 });
    return true;
  });
}

Deno.test("client against a real API server", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "kubeno-test" });
  assert.equal(client.server, cp.server);

  await t.step("every built-in kind is served under its plural and scope", async () => {
    const kinds = [
      Pod,
      Service,
      ConfigMap,
      Secret,
      ServiceAccount,
      Namespace,
      Node,
      Event,
      EventsV1Event,
      Deployment,
      ReplicaSet,
      StatefulSet,
      DaemonSet,
      Job,
      Lease,
      CustomResourceDefinition,
      Role,
      ClusterRole,
      RoleBinding,
      ClusterRoleBinding,
      ValidatingWebhookConfiguration,
      MutatingWebhookConfiguration,
    ];
    for (const kind of kinds) {
      const list = await client.list(kind as typeof ConfigMap, { limit: 1 });
      assert.equal(list.kind, `${kind.kind}List`, kind.kind);
      const byNamespace = await client.list(kind as typeof ConfigMap, {
        namespace: "default",
        limit: 1,
      });
      assert.ok(Array.isArray(byNamespace.items));
    }
    // Scope: a namespaced list of a cluster-scoped kind ignores the namespace.
    const namespaces = await client.list(Namespace, { namespace: "ignored" });
    assert.ok(namespaces.items.some((n) => n.metadata.name === "default"));
  });

  await t.step("ConfigMap: create, get, list, replace, patch, delete", async () => {
    const created = await client.create(ConfigMap, {
      metadata: { name: "cm1", namespace: "default", labels: { suite: "client" } },
      data: { a: "1" },
    });
    assert.equal(created.kind, "ConfigMap");
    assert.ok(created.metadata.uid);
    assert.deepEqual(
      created.metadata.managedFields?.map((m) => m.manager),
      ["kubeno-test"],
      "the client's fieldManager",
    );
    const dup = await client.create(ConfigMap, { metadata: { name: "cm1" } }).catch((e) => e);
    assert.ok(isAlreadyExists(dup), String(dup));

    const dry = await client.create(ConfigMap, { metadata: { name: "dry" } }, { dryRun: true });
    assert.equal(dry.metadata.name, "dry");
    assert.ok(isNotFound(await client.get(ConfigMap, "dry").catch((e) => e)));

    const got = await client.get(ConfigMap, "cm1", { namespace: "default" });
    assert.deepEqual(got.data, { a: "1" });
    const byLabel = await client.list(ConfigMap, {
      namespace: "default",
      labelSelector: "suite=client",
    });
    assert.deepEqual(byLabel.items.map((c) => [c.kind, c.apiVersion, c.metadata.name]), [[
      "ConfigMap",
      "v1",
      "cm1",
    ]]);
    const byField = await client.list(ConfigMap, { fieldSelector: "metadata.name=cm1" });
    assert.equal(byField.items.length, 1);

    const replaced = await client.replace(ConfigMap, { ...got, data: { a: "2" } });
    assert.equal(replaced.data?.a, "2");
    const stale = await client.replace(ConfigMap, { ...got, data: { a: "3" } }).catch((e) => e);
    assert.ok(isConflict(stale), String(stale));
    assert.match(stale.message, /^Cannot replace ConfigMap "default\/cm1": Conflict: /);

    const merged = await client.patch(ConfigMap, "cm1", { data: { b: "x", a: null } });
    assert.deepEqual(merged.data, { b: "x" });
    const jsonPatched = await client.patch(ConfigMap, "cm1", [
      { op: "test", path: "/data/b", value: "x" },
      { op: "add", path: "/data/c", value: "y" },
    ], { type: "json" });
    assert.deepEqual(jsonPatched.data, { b: "x", c: "y" });
    const failedTest = await client.patch(ConfigMap, "cm1", [
      { op: "test", path: "/data/b", value: "nope" },
    ], { type: "json" }).catch((e) => e);
    assert.ok(failedTest instanceof ApiError && failedTest.code >= 400, String(failedTest));
    const strategic = await client.patch(ConfigMap, "cm1", { data: { d: "z" } }, {
      type: "strategic",
    });
    assert.equal(strategic.data?.d, "z");

    const wrongUid = await client.delete(ConfigMap, "cm1", {
      preconditions: { uid: "00000000-0000-0000-0000-000000000000" },
    }).catch((e) => e);
    assert.ok(isConflict(wrongUid), String(wrongUid));
    assert.ok(await client.get(ConfigMap, "cm1"));
    // The server answers a ConfigMap's deletion with a Status, not the object.
    const deleted = await client.delete(ConfigMap, "cm1", {
      preconditions: { uid: created.metadata.uid },
      propagationPolicy: "Background",
      gracePeriodSeconds: 0,
    });
    assert.equal(deleted, undefined);
    const gone = await client.get(ConfigMap, "cm1").catch((e) => e);
    assert.ok(isNotFound(gone));
    assert.equal(
      gone.message,
      'Cannot get ConfigMap "default/cm1": NotFound: configmaps "cm1" not found',
    );
  });

  await t.step("validation failures carry the field causes", async () => {
    const err = await client.create(ConfigMap, { metadata: { name: "Not_Valid" } }).catch((e) => e);
    assert.ok(isInvalid(err), String(err));
    assert.ok(err.causes.some((c: { field?: string }) => c.field === "metadata.name"));
    assert.ok(!err.message.includes("\n"));
  });

  await t.step("server-side apply: conflicts without force, success with it", async () => {
    const applied = await client.apply(ConfigMap, {
      metadata: { name: "ssa", namespace: "default" },
      data: { owned: "by-first" },
    }, { fieldManager: "first" });
    assert.equal(applied.data?.owned, "by-first");
    // Re-applying the same values as another manager shares ownership without conflict.
    await client.apply(ConfigMap, { metadata: { name: "ssa" }, data: { other: "x" } }, {
      fieldManager: "second",
    });
    const conflict = await client.apply(ConfigMap, {
      metadata: { name: "ssa" },
      data: { owned: "by-second" },
    }, { fieldManager: "second" }).catch((e) => e);
    assert.ok(isConflict(conflict), String(conflict));
    assert.equal(conflict.code, 409);
    assert.ok(conflict.causes.some((c: { field?: string }) => c.field === ".data.owned"));
    const forced = await client.apply(ConfigMap, {
      metadata: { name: "ssa" },
      data: { owned: "by-second", other: "x" },
    }, { fieldManager: "second", force: true });
    assert.equal(forced.data?.owned, "by-second");
    const managers = forced.metadata.managedFields?.map((m) => m.manager);
    assert.ok(managers?.includes("second"));
    const dry = await client.apply(ConfigMap, { metadata: { name: "ssa" }, data: { n: "1" } }, {
      fieldManager: "third",
      dryRun: true,
    });
    assert.equal(dry.data?.n, "1");
    assert.equal((await client.get(ConfigMap, "ssa")).data?.n, undefined);
    await client.delete(ConfigMap, "ssa");
  });

  await t.step("Deployment: strategic patch and status subresource", async () => {
    const dep = await client.create(Deployment, {
      metadata: { name: "web" },
      spec: webDeploymentSpec(2),
    });
    const patched = await client.patch(Deployment, "web", {
      spec: { template: { spec: { containers: [{ name: "sidecar", image: "busybox" }] } } },
    }, { type: "strategic" });
    // Strategic merge merges containers by name instead of replacing the list.
    assert.deepEqual(patched.spec?.template.spec?.containers.map((c) => c.name).sort(), [
      "sidecar",
      "web",
    ]);
    const withStatus = await client.patchStatus(Deployment, "web", {
      status: { observedGeneration: dep.metadata.generation, replicas: 0 },
    });
    assert.equal(withStatus.status?.observedGeneration, dep.metadata.generation);
    assert.equal(withStatus.spec?.replicas, 2);
    const s = await client.getStatus(Deployment, "web");
    assert.equal(s.status?.observedGeneration, dep.metadata.generation);
    // Not deleted at once: the server answers with the object, finalizer added.
    const deleting = await client.delete(Deployment, "web", { propagationPolicy: "Foreground" });
    assert.ok(deleting?.metadata.deletionTimestamp);
    assert.ok(deleting.metadata.finalizers?.includes("foregroundDeletion"));
  });

  await t.step("a CRD installed through the client becomes Established", async () => {
    await installWidgetCrd(client);
  });

  await t.step("custom resource: every operation, and status apart from spec", async () => {
    const w = await client.create(Widget, { metadata: { name: "w1" }, spec: { size: 1 } });
    assert.equal(w.kind, "Widget");
    assert.equal((await client.get(Widget, "w1")).spec?.size, 1);
    assert.equal((await client.list(Widget, { namespace: "default" })).items[0].kind, "Widget");

    // Status-only update: the spec in the body is ignored.
    const st = await client.replaceStatus(Widget, {
      ...w,
      spec: { size: 99 },
      status: { phase: "Running", observed: 1 },
    });
    assert.equal(st.status?.phase, "Running");
    assert.equal(st.spec?.size, 1);
    assert.equal(st.metadata.generation, w.metadata.generation);

    // Spec-only update: the status in the body is ignored.
    const sp = await client.replace(Widget, { ...st, spec: { size: 2 }, status: { phase: "X" } });
    assert.equal(sp.spec?.size, 2);
    assert.equal(sp.status?.phase, "Running");

    const ps = await client.patchStatus(Widget, "w1", {
      status: { observed: 2 },
      spec: { size: 50 },
    });
    assert.equal(ps.status?.observed, 2);
    assert.equal(ps.spec?.size, 2);
    const jp = await client.patchStatus(Widget, "w1", [
      { op: "replace", path: "/status/phase", value: "Done" },
    ], { type: "json" });
    assert.equal(jp.status?.phase, "Done");
    assert.equal((await client.getStatus(Widget, "w1")).status?.phase, "Done");

    const mp = await client.patch(Widget, "w1", { spec: { color: "red" } });
    assert.deepEqual(mp.spec, { size: 2, color: "red" });

    const ap = await client.apply(Widget, {
      metadata: { name: "w2" },
      spec: { size: 3 },
    }, { fieldManager: "widget-ctl" });
    assert.equal(ap.spec?.size, 3);
    const as = await client.applyStatus(Widget, {
      metadata: { name: "w2" },
      status: { phase: "Ready" },
    }, { fieldManager: "widget-ctl" });
    assert.equal(as.status?.phase, "Ready");
    assert.equal(as.spec?.size, 3);
    const statusConflict = await client.applyStatus(Widget, {
      metadata: { name: "w2" },
      status: { phase: "Other" },
    }, { fieldManager: "intruder" }).catch((e) => e);
    assert.ok(isConflict(statusConflict), String(statusConflict));
    const forced = await client.applyStatus(Widget, {
      metadata: { name: "w2" },
      status: { phase: "Other" },
    }, { fieldManager: "intruder", force: true });
    assert.equal(forced.status?.phase, "Other");

    const pre = await client.delete(Widget, "w1", { preconditions: { uid: "nope" } }).catch((
      e,
    ) => e);
    assert.ok(isConflict(pre), String(pre));
    await client.delete(Widget, "w1", { preconditions: { uid: w.metadata.uid } });
    await client.delete(Widget, "w2");
    assert.ok(isNotFound(await client.get(Widget, "w1").catch((e) => e)));
  });

  await t.step(
    "watchEvents streams ADDED, MODIFIED and DELETED from a list's version",
    async () => {
      const start = await client.list(ConfigMap, { namespace: "default" });
      const ac = new AbortController();
      const seen: string[] = [];
      const done = (async () => {
        for await (
          const ev of client.watchEvents(ConfigMap, {
            namespace: "default",
            resourceVersion: start.metadata.resourceVersion,
            labelSelector: "suite=watch",
            allowWatchBookmarks: true,
            signal: ac.signal,
          })
        ) {
          if (ev.type === "BOOKMARK" || ev.type === "ERROR") continue;
          seen.push(`${ev.type} ${ev.object.metadata.name} ${ev.object.data?.v ?? ""}`.trim());
          if (ev.type === "DELETED") return;
        }
      })();
      await client.create(ConfigMap, { metadata: { name: "w", labels: { suite: "watch" } } });
      await client.patch(ConfigMap, "w", { data: { v: "1" } });
      await client.delete(ConfigMap, "w");
      const timer = setTimeout(() => ac.abort(new Error("watch test timed out")), 30_000);
      try {
        await done;
      } finally {
        clearTimeout(timer);
      }
      assert.deepEqual(seen, ["ADDED w", "MODIFIED w 1", "DELETED w 1"]);
    },
  );

  /** Watches of widgets open in kube-apiserver, by its own gauge. */
  const serverWidgetWatches = () => serverWatches(cp, "widgets");
  const noWidgetWatchLeft = (what: string) =>
    until(what, async () => (await serverWidgetWatches()) === 0);

  await t.step(
    "watchEvents closes the server's watch on break, on abort and at the server's timeout",
    async () => {
      await noWidgetWatchLeft("no widget watch before");
      await client.create(Widget, { metadata: { name: "wa" }, spec: { size: 1 } });
      const signal = AbortSignal.timeout(30_000);
      for await (const ev of client.watchEvents(Widget, { namespace: "default", signal })) {
        assert.equal(ev.type, "ADDED");
        await until(
          "the server to count the watch",
          async () => (await serverWidgetWatches()) === 1,
        );
        break;
      }
      await noWidgetWatchLeft("the server to close the watch left by break");

      const ac = new AbortController();
      const reason = new Error("stop");
      await assert.rejects(
        (async () => {
          for await (const _ of client.watchEvents(Widget, { signal: ac.signal })) {
            await until(
              "the server to count the watch",
              async () => (await serverWidgetWatches()) === 1,
            );
            ac.abort(reason);
          }
        })(),
        (e) => e === reason,
      );
      await noWidgetWatchLeft("the server to close the aborted watch");

      const events = await Array.fromAsync(
        client.watchEvents(Widget, { namespace: "default", timeoutSeconds: 1, signal }),
      );
      assert.deepEqual(
        events.map((e) => e.type === "ADDED" ? `ADDED ${e.object.metadata.name}` : e.type),
        ["ADDED wa"],
      );
      await noWidgetWatchLeft("the server to close the timed-out watch");
      await client.delete(Widget, "wa");
    },
  );

  await t.step("a server-side timeout ends the stream", async () => {
    const events = [];
    for await (
      const ev of client.watchEvents(Namespace, {
        timeoutSeconds: 1,
        signal: AbortSignal.timeout(30_000),
      })
    ) events.push(ev);
    assert.ok(events.length >= 4, "synthetic ADDED events for existing namespaces");
  });

  await t.step("10,000 ConfigMaps are listed in pages of 500", async () => {
    await client.create(Namespace, { metadata: { name: "many" } });
    const total = 10_000;
    let next = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (next < total) {
        const i = next++;
        await client.create(ConfigMap, {
          metadata: { name: `cm-${i}`, namespace: "many" },
          data: { i: String(i) },
        });
      }
    }));
    let pages = 0;
    let items = 0;
    const rvs = new Set<string | undefined>();
    for await (const page of client.listPages(ConfigMap, { namespace: "many", limit: 500 })) {
      pages++;
      items += page.items.length;
      rvs.add(page.metadata.resourceVersion);
      assert.ok(page.items.length <= 500);
    }
    assert.equal(items, total);
    assert.equal(pages, 20);
    assert.equal(rvs.size, 1, "all pages come from one snapshot");
    const all = await client.listAll(ConfigMap, { namespace: "many", limit: 500 });
    assert.equal(all.items.length, total);
    assert.equal(new Set(all.items.map((c) => c.metadata.name)).size, total);
    assert.ok(all.metadata.resourceVersion);
    const whole = await client.list(ConfigMap, { namespace: "many" });
    assert.equal(whole.items.length, total);
  });

  await t.step("a user without RBAC gets Forbidden in one line", async () => {
    using alice = await createClient({ kubeconfig: await cp.createUser("alice") });
    const err = await alice.list(ConfigMap, { namespace: "default" }).catch((e) => e);
    assert.ok(isForbidden(err), String(err));
    assert.equal(err.code, 403);
    assert.ok(!err.message.includes("\n"));
    assert.match(err.message, /^Cannot list configmaps in namespace "default": Forbidden: .*alice/);
    await assert.rejects(
      Array.fromAsync(alice.watchEvents(ConfigMap, { namespace: "default" })),
      (e) => e instanceof ApiError && e.code === 403 && e.target.verb === "watch",
    );
  });

  await t.step("an unreachable server gives a one-line ConnectionError naming it", async () => {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    const server = `https://127.0.0.1:${port}`;
    using c = await createClient({ kubeconfig: await cp.writeKubeconfig({ server }) });
    const err = await c.get(ConfigMap, "x").catch((e) => e);
    assert.ok(err instanceof ConnectionError, String(err));
    assert.ok(err.message.startsWith(`Cannot get from Kubernetes API server "${server}": `));
    assert.ok(!err.message.includes("\n"), err.message);
  });

  await t.step("bad or untrusted certificate data gives one-line errors", async () => {
    const path = await cp.writeKubeconfig();
    const text = await Deno.readTextFile(path);
    const garbage = btoa("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
    await Deno.writeTextFile(
      path,
      text.replace(/certificate-authority-data: .*/, `certificate-authority-data: ${garbage}`),
    );
    const bad = await createClient({ kubeconfig: path }).catch((e) => e);
    assert.ok(bad instanceof KubeconfigError, String(bad));
    assert.match(bad.message, /^Cannot load kubeconfig ".*": unusable certificate data: /);
    // A valid certificate that did not sign the server's: TLS fails on connect.
    const clientCert = text.match(/client-certificate-data: (.*)/)![1];
    await Deno.writeTextFile(
      path,
      text.replace(/certificate-authority-data: .*/, `certificate-authority-data: ${clientCert}`),
    );
    using c = await createClient({ kubeconfig: path });
    const err = await c.get(ConfigMap, "x").catch((e) => e);
    assert.ok(err instanceof ConnectionError, String(err));
    assert.match(err.message, /certificate/i);
    assert.ok(!err.message.includes("\n"), err.message);
  });

  await t.step("a malformed kubeconfig gives a one-line error naming the file", async () => {
    const path = await Deno.makeTempFile({ suffix: ".yaml" });
    await Deno.writeTextFile(path, "apiVersion: v1\nclusters: [ {name: x\n  cluster: {\n");
    const err = await createClient({ kubeconfig: path }).catch((e) => e);
    assert.ok(err instanceof KubeconfigError, String(err));
    assert.ok(err.message.startsWith(`Cannot load kubeconfig "${path}": `), err.message);
    assert.ok(!err.message.includes("\n"), err.message);
    const missing = await createClient({ kubeconfig: `${path}.missing` }).catch((e) => e);
    assert.equal(missing.message, `Cannot load kubeconfig "${path}.missing": file does not exist`);
    const badContext = await createClient({ kubeconfig: cp.kubeconfigPath, context: "nope" })
      .catch((e) => e);
    assert.match(badContext.message, /context "nope" does not exist/);
    await Deno.remove(path);
  });

  await t.step("an unknown resource is not mistaken for a missing object", async () => {
    const Ghost = resource({ group: "ghosts.kubeno.dev", version: "v1", kind: "Ghost" });
    const err = await client.get(Ghost, "boo").catch((e) => e);
    assert.ok(err instanceof ApiError && err.resourceUnknown, String(err));
    assert.equal(isNotFound(err as unknown), false);
    assert.equal(
      err.message,
      'Cannot get Ghost "default/boo": the server does not know resource ' +
        '"ghosts.ghosts.kubeno.dev/v1" (is its CustomResourceDefinition installed?)',
    );
    const CoreGhost = resource({ group: "", version: "v1", kind: "Ghost" });
    const err2 = await client.list(CoreGhost).catch((e) => e);
    assert.ok(err2 instanceof ApiError && err2.resourceUnknown, String(err2));
    assert.match(err2.message, /does not know resource "ghosts\/v1"/);
  });
});
