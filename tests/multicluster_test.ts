// Many clusters, against three real control planes: a hub and two members. The example fleet
// operator (examples/fleet.ts) pushes the hub's settings into labelled Namespaces of every
// member whose kubeconfig Secret is on the hub. A member registered at run time (the hub's
// own API server, as a third member) is reconciled within 10 s; deleting a member's Secret
// closes its watches (that API server's own gauge) while the others keep converging; with a
// member's API server stopped the others still reconcile (the latency bound is asserted in
// tests/multicluster_isolation_test.ts).
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { ConfigMap, Event, Namespace, Secret } from "../src/core/kinds.ts";
import { FLEET_NAMESPACE, fleetOperator } from "../examples/fleet.ts";
import { operatorKubeconfig, register, settings, syncedNamespace } from "./_fleet.ts";
import { clusterMetrics } from "../src/metrics/cluster_metrics.ts";
import { Registry } from "../src/metrics/registry.ts";
import { serverWatches, startExample, waitFor } from "./_helpers.ts";
import { freePort } from "../src/testing/process.ts";
import { startFaultProxy } from "../src/testing/fault_proxy.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";

/** Watches of `resource` open in a control plane's kube-apiserver, by its own gauge. */
const watches = serverWatches;

Deno.test("a fleet engages and disengages member clusters at run time", async (t) => {
  const [hubCp, m1, m2] = await Promise.all([
    startControlPlane(),
    startControlPlane(),
    startControlPlane(),
  ]);
  using hub = await createClient({ kubeconfig: hubCp.kubeconfigPath });
  using c1 = await createClient({ kubeconfig: m1.kubeconfigPath });
  using c2 = await createClient({ kubeconfig: m2.kubeconfigPath });
  await hub.create(Namespace, { metadata: { name: FLEET_NAMESPACE } });
  // The operator's hub client has only what `manifests` grants.
  const hubConfig = `${hubCp.dir}/fleet-operator.kubeconfig`;
  await Deno.writeTextFile(hubConfig, await operatorKubeconfig(hubCp, "hub"));
  using operatorHub = await createClient({ kubeconfig: hubConfig });
  const registry = new Registry();
  const metrics = clusterMetrics(registry);
  const { manager, fleet } = fleetOperator(operatorHub, {
    metrics: metrics.hooks,
    onCluster: metrics.onCluster,
    unreachableAfterMs: 3_000,
  });
  try {
    await hub.create(ConfigMap, {
      metadata: { name: "fleet-settings", namespace: FLEET_NAMESPACE },
      data: { mode: "fast" },
    });
    // The API server's own informers watch Namespaces too: count from before the fleet.
    const m2Before = await watches(m2, "namespaces");
    await register(hub, "member-1", await operatorKubeconfig(m1, "member"));
    await register(hub, "member-2", await operatorKubeconfig(m2, "member"));
    const running = manager.start();
    running.catch(() => {});

    let ns1 = "", ns2 = "";
    await t.step("the example operator reconciles objects on both members", async () => {
      [ns1, ns2] = await Promise.all([syncedNamespace(c1, "team"), syncedNamespace(c2, "team")]);
      await waitFor(async () => (await settings(c1, ns1))?.cluster === "member-1", {
        what: `member-1's ${ns1}/fleet-settings`,
      });
      await waitFor(async () => (await settings(c2, ns2))?.cluster === "member-2", {
        what: `member-2's ${ns2}/fleet-settings`,
      });
      assert.deepEqual(await settings(c1, ns1), { mode: "fast", cluster: "member-1" });
      assert.deepEqual(await settings(c2, ns2), { mode: "fast", cluster: "member-2" });
      assert.deepEqual(fleet.clusters().map((c) => [c.name, c.ready]), [
        ["member-1", true],
        ["member-2", true],
      ]);
      const text = await registry.metrics();
      for (const m of ["member-1", "member-2"]) {
        assert.match(
          text,
          new RegExp(
            `kubeno_cluster_reconcile_total\\{cluster="${m}",controller="fleet-settings",result="success"\\} [1-9]`,
          ),
        );
        assert.match(text, new RegExp(`kubeno_cluster_engaged\\{cluster="${m}"\\} 1`));
        // The controllers' own families carry the cluster too.
        assert.match(
          text,
          new RegExp(
            `controller_runtime_reconcile_total\\{cluster="${m}",controller="fleet-settings",result="success"\\} [1-9]`,
          ),
        );
        assert.match(
          text,
          new RegExp(
            `workqueue_adds_total\\{cluster="${m}",name="fleet-settings",controller="fleet-settings"\\} [1-9]`,
          ),
        );
      }
      // Each member's Event is on that member's API server, and only there.
      const pushed = async (c: Client) =>
        (await c.list(Event, { namespace: "default" })).items
          .filter((e) => e.reason === "SettingsPushed")
          .map((e) => `${e.involvedObject.name}: ${e.message}`);
      await waitFor(async () => (await pushed(c1)).length > 0 && (await pushed(c2)).length > 0, {
        what: "a SettingsPushed Event on each member",
      });
      assert.deepEqual(await pushed(c1), [`${ns1}: fleet-settings pushed on member-1`]);
      assert.deepEqual(await pushed(c2), [`${ns2}: fleet-settings pushed on member-2`]);
      const unqualified = text.split("\n").filter((l) =>
        /^(controller_runtime_|workqueue_|kubeno_controller_)/.test(l) && !l.includes('{cluster="')
      );
      assert.deepEqual(unqualified, [], "every controller series carries a cluster label");
      await waitFor(async () => (await watches(m2, "namespaces")) === m2Before + 1, {
        what: `member-2's API server to count the fleet's Namespace watch (had ${m2Before})`,
      });
    });

    let ns3 = "";
    await t.step("a member registered at run time is reconciled within 10 s", async () => {
      ns3 = await syncedNamespace(hub, "team");
      const kubeconfig = await operatorKubeconfig(hubCp, "member");
      const t0 = performance.now();
      await register(hub, "member-3", kubeconfig);
      await waitFor(async () => (await settings(hub, ns3))?.cluster === "member-3", {
        what: `member-3's ${ns3}/fleet-settings`,
        timeoutMs: 10_000,
      });
      console.log(
        `member-3 registered → its Namespace reconciled in ${
          Math.round(performance.now() - t0)
        } ms`,
      );
    });

    await t.step("deleting a member's Secret closes its watches; the others converge", async () => {
      const engaged = await watches(m2, "namespaces");
      await hub.delete(Secret, "member-2", { namespace: FLEET_NAMESPACE });
      await waitFor(() => !fleet.clusters().some((c) => c.name === "member-2"), {
        what: "member-2 to be disengaged",
      });
      await waitFor(async () => (await watches(m2, "namespaces")) === m2Before, {
        what: `member-2's API server's Namespace watch count to drop back to ${m2Before}`,
      });
      assert.doesNotMatch(
        await registry.metrics(),
        /\{cluster="member-2"/,
        "member-2's series are gone",
      );
      console.log(
        `member-2 apiserver_longrunning_requests{resource="namespaces",verb="WATCH"}: ${engaged} → ${m2Before} after its Secret was deleted`,
      );
      await hub.patch(ConfigMap, "fleet-settings", { data: { mode: "slow" } }, {
        namespace: FLEET_NAMESPACE,
      });
      await waitFor(async () => (await settings(c1, ns1))?.mode === "slow", {
        what: "member-1's settings to follow the hub",
      });
      await waitFor(async () => (await settings(hub, ns3))?.mode === "slow", {
        what: "member-3's settings to follow the hub",
      });
      assert.equal((await settings(c2, ns2))?.mode, "fast", "member-2 is no longer reconciled");
    });

    await t.step(
      "member-1's API server stopped: member-3 still reconciles (the 2× bound is asserted in multicluster_isolation_test.ts)",
      async () => {
        const latency = async (): Promise<number> => {
          const ns = await syncedNamespace(hub, "lat");
          const t0 = performance.now();
          await waitFor(async () => (await settings(hub, ns))?.cluster === "member-3", {
            what: `member-3's ${ns}/fleet-settings`,
            intervalMs: 10,
          });
          return Math.round(performance.now() - t0);
        };
        const up: number[] = [];
        for (let i = 0; i < 3; i++) up.push(await latency());
        await m1.stopApiServer();
        const down: number[] = [];
        for (let i = 0; i < 3; i++) down.push(await latency());
        const states = fleet.clusters().map((c) => `${c.name}=${c.ready ? "ready" : "not ready"}`);
        console.log(
          `member-3 create → reconciled, ms: member-1 up [${
            up.join(", ")
          }], member-1's API server stopped [${down.join(", ")}]; clusters: ${
            states.join(", ")
          }; readyz: ${fleet.readyzCheck()()}`,
        );
      },
    );

    await t.step("unreachable past the deadline: disengaged, then engaged again", async () => {
      await waitFor(() => !fleet.clusters().some((c) => c.name === "member-1"), {
        what: "member-1 to be disengaged (unreachableAfterMs 3000)",
      });
      assert.ok(fleet.known().includes("member-1"), "its Secret still names it");
      await m1.startApiServer();
      const ns = await syncedNamespace(c1, "back");
      await waitFor(async () => (await settings(c1, ns))?.cluster === "member-1", {
        what: "member-1 to be engaged again and reconciled once its API server is back",
      });
      assert.equal((await settings(c1, ns))?.mode, "slow");
    });

    await manager.stop();
    await running;
    assert.deepEqual(fleet.clusters(), [], "every cluster was disengaged");

    await t.step(
      "`examples/fleet.ts run`: /readyz?verbose lists the member; SIGTERM disengages it",
      async () => {
        // One member Secret on the hub: member-1's.
        await hub.delete(Secret, "member-3", { namespace: FLEET_NAMESPACE });
        const [probePort, metricsPort] = [freePort(), freePort()];
        const op = startExample(
          "examples/fleet.ts",
          [
            `--health-probe-bind-address=127.0.0.1:${probePort}`,
            `--metrics-bind-address=127.0.0.1:${metricsPort}`,
            "--metrics-secure=false",
          ],
          { KUBECONFIG: hubConfig },
          { cwd: new URL("../", import.meta.url).pathname },
        );
        try {
          const ns = await syncedNamespace(c1, "proc");
          await waitFor(async () => (await settings(c1, ns))?.cluster === "member-1", {
            what: `the operator process to reconcile member-1's ${ns}/fleet-settings`,
          });
          let readyz = "";
          await waitFor(async () => {
            const res = await fetch(`http://127.0.0.1:${probePort}/readyz?verbose`);
            readyz = await res.text();
            return res.status === 200 && readyz.includes("member-1: ready");
          }, { what: "/readyz?verbose to list member-1 ready" });
          assert.doesNotMatch(readyz, /member-3/, "member-3's Secret was deleted");
          const metricsText = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
          assert.match(metricsText, /kubeno_cluster_engaged\{cluster="member-1"\} 1/);
          const status = await op.stop("SIGTERM");
          assert.equal(status.code, 0, op.logs());
          assert.equal(op.lines(/"msg":"Disengaged cluster member-1:/).length, 1, op.logs());
          console.log(
            `fleet-operator run: ${
              readyz.trim().replaceAll("\n", " | ")
            }; SIGTERM → exit ${status.code}, "${
              op.lines(/"msg":"Disengaged cluster/)[0]?.trim()
            }"`,
          );
        } finally {
          await op.stop("SIGKILL");
        }
      },
    );

    await t.step(
      "`examples/fleet.ts run` before the hub is reachable: waits (/readyz fails), then runs; --startup-timeout bounds the wait",
      async () => {
        // The operator's hub kubeconfig, pointed at a port nothing listens on yet.
        const port = freePort();
        const lateConfig = `${hubCp.dir}/fleet-operator-late.kubeconfig`;
        await Deno.writeTextFile(
          lateConfig,
          (await Deno.readTextFile(hubConfig)).replace(hubCp.server, `https://127.0.0.1:${port}`),
        );
        const probePort = freePort();
        const flags = [
          `--health-probe-bind-address=127.0.0.1:${probePort}`,
          `--metrics-bind-address=127.0.0.1:${freePort()}`,
          "--metrics-secure=false",
        ];
        const cwd = new URL("../", import.meta.url).pathname;
        const op = startExample("examples/fleet.ts", flags, { KUBECONFIG: lateConfig }, { cwd });
        let proxy: Awaited<ReturnType<typeof startFaultProxy>> | undefined;
        try {
          const probe = async (path: string) => {
            const res = await fetch(`http://127.0.0.1:${probePort}${path}`);
            return { status: res.status, text: await res.text() };
          };
          let waiting = { status: 0, text: "" };
          await waitFor(async () => {
            waiting = await probe("/readyz?verbose").catch(() => waiting);
            return waiting.status === 500 && /\[-\]hub failed/.test(waiting.text);
          }, { what: "/readyz to fail on the hub check while the hub is unreachable" });
          assert.equal((await probe("/healthz")).status, 200, "alive meanwhile");
          proxy = await startFaultProxy({ target: hubCp.server, port });
          const ns = await syncedNamespace(c1, "late");
          await waitFor(async () => (await settings(c1, ns))?.cluster === "member-1", {
            what: `the late-started process to reconcile member-1's ${ns}/fleet-settings`,
          });
          let ready = { status: 0, text: "" };
          await waitFor(async () => {
            ready = await probe("/readyz?verbose");
            return ready.status === 200;
          }, { what: "/readyz to pass once the hub answered" });
          const status = await op.stop("SIGTERM");
          assert.equal(status.code, 0, op.logs());
          console.log(
            `hub unreachable at start: ${waiting.status} "${
              waiting.text.trim().split("\n").find((l) => l.includes("hub"))
            }"; hub reachable → ${ready.status}; waiting lines: ${
              op.lines(/Kubernetes API server|hub/i).length
            }`,
          );
        } finally {
          await op.stop("SIGKILL");
          await proxy?.close();
        }
        // Nothing ever listens: --startup-timeout ends it, one line, exit 1.
        const dead = `${hubCp.dir}/fleet-operator-dead.kubeconfig`;
        await Deno.writeTextFile(
          dead,
          (await Deno.readTextFile(hubConfig)).replace(
            hubCp.server,
            `https://127.0.0.1:${freePort()}`,
          ),
        );
        const out = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            "--quiet",
            "examples/fleet.ts",
            "run",
            ...flags,
            "--startup-timeout=2s",
          ],
          cwd,
          env: { KUBECONFIG: dead },
          stdout: "null",
          stderr: "piped",
        }).output();
        const stderr = new TextDecoder().decode(out.stderr).trim();
        assert.equal(out.code, 1, stderr);
        const last = stderr.split("\n").at(-1)!;
        assert.match(
          last,
          /^fleet-operator: Gave up after waiting 2s for the Kubernetes API server/,
        );
        console.log(`hub never reachable, --startup-timeout=2s: exit ${out.code}, "${last}"`);
      },
    );

    await t.step(
      "`install` on a fleet operator: the CRDs on every member; an unreachable member is one error line",
      async () => {
        // Install writes CRDs: the members' Secrets carry admin kubeconfigs here (the operator's
        // member token from `manifests --member` may not create CRDs).
        await hub.delete(Secret, "member-1", { namespace: FLEET_NAMESPACE });
        await register(hub, "admin-1", await Deno.readTextFile(m1.kubeconfigPath));
        await register(hub, "admin-2", await Deno.readTextFile(m2.kubeconfigPath));
        await register(
          hub,
          "gone",
          (await Deno.readTextFile(m1.kubeconfigPath)).replace(
            m1.server,
            `https://127.0.0.1:${freePort()}`,
          ),
        );
        const out = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            "--quiet",
            "tests/fixtures/fleet_widget_operator.ts",
            "install",
            "--kubeconfig",
            hubCp.kubeconfigPath,
            "--timeout=3s",
          ],
          cwd: new URL("../", import.meta.url).pathname,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const stdout = new TextDecoder().decode(out.stdout).trim().split("\n");
        const errors = new TextDecoder().decode(out.stderr).trim().split("\n")
          .filter((l) => l.startsWith("fleet-widget-operator: "));
        console.log(`install on the fleet: exit ${out.code}\n${[...stdout, ...errors].join("\n")}`);
        assert.equal(out.code, 1);
        const crd = "customresourcedefinition.apiextensions.k8s.io/widgets.widgets.kubeno.dev";
        assert.deepEqual(stdout, [`admin-1: ${crd} applied`, `admin-2: ${crd} applied`]);
        assert.equal(errors.length, 1, errors.join("\n"));
        assert.match(errors[0], /^fleet-widget-operator: Cannot install on cluster "gone": /);
        for (const c of [c1, c2]) {
          const got = await c.get(CustomResourceDefinition, "widgets.widgets.kubeno.dev");
          assert.equal(got.metadata.name, "widgets.widgets.kubeno.dev");
        }
        for (const name of ["admin-1", "admin-2", "gone"]) {
          await hub.delete(Secret, name, { namespace: FLEET_NAMESPACE });
        }
      },
    );
  } finally {
    await manager.stop();
    await Promise.all([hubCp, m1, m2].map((cp) => cp.stop()));
  }
});
