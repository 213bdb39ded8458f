// The seed's operator end to end, driven the way a user drives it: `deno run -A
// examples/myapp.ts install`, the operator running in the background, and kubectl against a
// real control plane with workloads (pods become Ready on kwok's fake nodes).
import assert from "node:assert/strict";
import { createClient, Deployment, Event, isNotFound } from "../mod.ts";
import { startControlPlane } from "../testing.ts";
import { Myapp } from "../examples/myapp.ts";
import { applyAdmitted, installOperator, NO_SERVERS, startExample, waitFor } from "./_helpers.ts";
import { MYAPP_EXAMPLE as EXAMPLE, MYAPP_SAMPLE as SAMPLE } from "./_examples.ts";

const NS = "default";

Deno.test("examples/myapp.ts end to end: install, reconcile, webhook, finalizer, GC", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const kubeconfig = `--kubeconfig=${cp.kubeconfigPath}`;
  const env = { NO_COLOR: "1", KUBECONFIG: "/nonexistent", POD_NAMESPACE: "", WATCH_NAMESPACE: "" };

  await t.step("install applies the CRD and webhook configurations", async () => {
    const { stdout, stderr } = await installOperator(EXAMPLE, cp.kubeconfigPath, env);
    assert.match(
      stdout,
      /customresourcedefinition\.apiextensions\.k8s\.io\/myapps\.apps\.kubeno\.dev/,
    );
    assert.doesNotMatch(stderr, /punycode|DeprecationWarning/);
  });

  const patchReplicas = (replicas: number) =>
    cp.kubectl(
      ...["patch", "myapp", "myapp-sample", "-n", NS, "--type=merge"],
      ...["-p", JSON.stringify({ spec: { replicas } })],
    );
  const operator = startExample(EXAMPLE, [
    kubeconfig,
    `--namespace=${NS}`,
    "--leader-elect",
    ...NO_SERVERS,
    "--log-format=json",
  ], env);

  try {
    await t.step("kubectl apply of the sample is admitted once the webhook serves", async () => {
      await applyAdmitted(cp, SAMPLE);
      const app = await client.get(Myapp, "myapp-sample", { namespace: NS });
      assert.equal(app.spec.port, 8080, "the mutating webhook defaults spec.port");
    });

    await t.step(
      "Deployment with a controller ownerReference; pods Ready; phase Running",
      async () => {
        const app = await client.get(Myapp, "myapp-sample", { namespace: NS });
        const dep = await waitFor(
          () => client.get(Deployment, "myapp-sample", { namespace: NS }).catch(() => undefined),
          { timeoutMs: 30_000, what: "the Deployment" },
        );
        const owner = dep.metadata.ownerReferences?.find((o) => o.controller);
        assert.equal(owner?.uid, app.metadata.uid);
        assert.equal(owner?.kind, "Myapp");
        const running = await waitFor(async () => {
          const a = await client.get(Myapp, "myapp-sample", { namespace: NS });
          return a.status?.phase === "Running" ? a : undefined;
        }, { timeoutMs: 90_000, intervalMs: 200, what: "phase Running" });
        assert.equal(running.status?.readyReplicas, 2);
        assert.equal(running.status?.observedGeneration, running.metadata.generation);
        assert.equal(running.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
      },
    );

    await t.step("kubectl get myapps shows the printer columns", async () => {
      const r = await cp.kubectl("get", "myapps", "-n", NS);
      assert.equal(r.code, 0, r.stderr);
      const [header, row] = r.stdout.trim().split("\n");
      assert.match(header, /NAME\s+PHASE\s+READY\s+REPLICAS\s+AGE/);
      assert.match(row, /myapp-sample\s+Running\s+2\s+2\s+/);
    });

    await t.step("scaling to 3 follows", async () => {
      const r = await patchReplicas(3);
      assert.equal(r.code, 0, r.stderr);
      await waitFor(async () => {
        const a = await client.get(Myapp, "myapp-sample", { namespace: NS });
        return a.status?.phase === "Running" && a.status.readyReplicas === 3;
      }, { timeoutMs: 90_000, intervalMs: 200, what: "3 ready replicas" });
      const dep = await client.get(Deployment, "myapp-sample", { namespace: NS });
      assert.equal(dep.spec?.replicas, 3);
    });

    await t.step("replicas: 101 is denied with the webhook's message", async () => {
      const r = await patchReplicas(101);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /denied the request: spec\.replicas: must be at most 100, got 101/);
      const a = await client.get(Myapp, "myapp-sample", { namespace: NS });
      assert.equal(a.spec.replicas, 3);
    });

    await t.step("a no-op update triggers no write", async () => {
      const before = await client.get(Myapp, "myapp-sample", { namespace: NS });
      const depBefore = await client.get(Deployment, "myapp-sample", { namespace: NS });
      // A metadata-only change: the predicate filters it, and even a reconcile would write
      // nothing because nothing the operator owns differs.
      const r = await cp.kubectl(
        "annotate",
        "myapp",
        "myapp-sample",
        "-n",
        NS,
        "example.com/touched=yes",
      );
      assert.equal(r.code, 0, r.stderr);
      const touched = await client.get(Myapp, "myapp-sample", { namespace: NS });
      // A sentinel created after the annotation: once it is reconciled, the operator has
      // seen the annotation event too (one informer, events in order, FIFO queue).
      await client.create(Myapp, {
        metadata: { name: "sentinel", namespace: NS },
        spec: { image: "nginx", replicas: 0 },
      } as never);
      await waitFor(
        async () =>
          (await client.get(Myapp, "sentinel", { namespace: NS })).status?.phase === "Running",
        {
          timeoutMs: 60_000,
          what: "the sentinel to be reconciled",
        },
      );
      const after = await client.get(Myapp, "myapp-sample", { namespace: NS });
      const depAfter = await client.get(Deployment, "myapp-sample", { namespace: NS });
      assert.equal(
        after.metadata.resourceVersion,
        touched.metadata.resourceVersion,
        "Myapp written",
      );
      assert.equal(
        depAfter.metadata.resourceVersion,
        depBefore.metadata.resourceVersion,
        "Deployment written",
      );
      assert.notEqual(touched.metadata.resourceVersion, before.metadata.resourceVersion);
    });

    await t.step(
      "delete: the finalizer's cleanup runs, the Myapp goes, the Deployment is collected",
      async () => {
        const app = await client.get(Myapp, "myapp-sample", { namespace: NS });
        assert.ok(app.metadata.finalizers?.includes("apps.kubeno.dev/cleanup"));
        const r = await cp.kubectl("delete", "myapp", "myapp-sample", "-n", NS, "--wait=false");
        assert.equal(r.code, 0, r.stderr);
        await waitFor(
          () =>
            client.get(Myapp, "myapp-sample", { namespace: NS }).then(
              () => false,
              (e) => isNotFound(e),
            ),
          { timeoutMs: 60_000, what: "the Myapp to be gone" },
        );
        const events = await client.list(Event, {
          namespace: NS,
          fieldSelector: `involvedObject.uid=${app.metadata.uid}`,
        });
        assert.ok(
          events.items.some((e) => e.reason === "CleanedUp"),
          "the finalize step recorded its Event",
        );
        await waitFor(
          () =>
            client.get(Deployment, "myapp-sample", { namespace: NS }).then(
              () => false,
              (e) => isNotFound(e),
            ),
          { timeoutMs: 60_000, what: "the Deployment to be garbage-collected" },
        );
      },
    );

    await t.step("SIGTERM: the operator drains and exits 0", async () => {
      // stop() tolerates an exit before the signal: the status below says how.
      const status = await operator.stop("SIGTERM");
      const tail = operator.logs().split("\n").slice(-30).join("\n");
      assert.equal(status.code, 0, `exit ${status.code}, signal ${status.signal}; logs:\n${tail}`);
      assert.equal(status.signal, null);
    });
  } finally {
    // Only when a step above threw before the SIGTERM step ran.
    await operator.stop("SIGKILL");
  }
});
