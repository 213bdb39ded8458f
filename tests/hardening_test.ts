// Fixes from review, each checked against the real API server. One control plane for the file,
// started with the OwnerReferencesPermissionEnforcement admission plugin (as OpenShift runs
// it), so that RBAC derived for owned kinds is checked the way hardened clusters check it.
//
// Each step says which review item it covers. Waits have deadlines; nothing sleeps a fixed
// time; timings are printed, never asserted.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ApiError, isForbidden } from "../src/client/errors/api_error.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { operatorManifests } from "../src/deploy/manifests.ts";
import { admission } from "../src/webhook/admission.ts";
import { serveWebhooks } from "../src/webhook/webhooks.ts";
import { selfManagedCertificates } from "../src/webhook/self_managed_certs.ts";
import { freePort } from "../src/testing/process.ts";
import { toYaml } from "../src/util/yaml.ts";
import { createCa } from "../src/util/x509.ts";
import type { KubeObject } from "../src/core/object.ts";
import { installStack, Stack } from "./_stack.ts";
import { startFaultProxy } from "../src/testing/fault_proxy.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { HealthChecks, serveProbes, watchesNotStalled } from "../src/runtime/manager/health.ts";
import { httpsGet, serviceAccountToken, uniqueName, userClusterRole, waitFor } from "./_helpers.ts";

const WIDGET = new URL("./fixtures/widget_operator.ts", import.meta.url).pathname;
const TLS_PROBE = new URL("./fixtures/tls_trust_probe.ts", import.meta.url).pathname;

/** Applies objects as admin with kubectl. */
async function kubectlApply(
  cp: { kubectl(...a: string[]): Promise<{ code: number; stderr: string }>; dir: string },
  objects: KubeObject[],
): Promise<void> {
  const file = `${cp.dir}/apply-${crypto.randomUUID().slice(0, 8)}.yaml`;
  await Deno.writeTextFile(file, toYaml(objects));
  const r = await cp.kubectl("apply", "-f", file);
  assert.equal(r.code, 0, r.stderr);
}

/** A process of the widget fixture operator with its output collected. */
class Widgets {
  readonly proc: Deno.ChildProcess;
  log = "";
  readonly #pump: Promise<void>;
  constructor(args: string[]) {
    this.proc = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", WIDGET, ...args],
      env: { NO_COLOR: "1", KUBECONFIG: "/nonexistent", POD_NAMESPACE: "", WATCH_NAMESPACE: "" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const read = async (s: ReadableStream<Uint8Array>) => {
      for await (const c of s.pipeThrough(new TextDecoderStream())) this.log += c;
    };
    this.#pump = Promise.all([read(this.proc.stdout), read(this.proc.stderr)]).then(() => {});
  }
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      this.proc.kill("SIGKILL");
    } catch { /* exited */ }
    await this.proc.status;
    await this.#pump;
  }
}

Deno.test("review fixes against a real API server", async (t) => {
  await using cp = await startControlPlane({
    apiServerFlags: ["--enable-admission-plugins=OwnerReferencesPermissionEnforcement"],
  });
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installStack(admin);

  await t.step(
    "RBAC: a controller that owns kinds may set blockOwnerDeletion under OwnerReferencesPermissionEnforcement",
    async () => {
      const ns = "stack-system";
      await admin.create(Namespace, { metadata: { name: ns } });
      // Owns ConfigMaps, no finalizer: before the fix, no stacks/finalizers permission.
      const controller = reconcile(Stack, {
        name: "stack-owner",
        owns: [ConfigMap],
        async reconcile(stack, ctx) {
          await ctx.apply(ConfigMap, {
            metadata: { name: `${stack.metadata.name}-value` },
            data: { value: stack.spec.value },
          });
        },
      });
      const m = operatorManifests({
        name: "stack-operator",
        version: "1.0.0",
        controllers: [controller],
        crds: [],
        namespace: ns,
        image: "stack-operator:1.0.0",
      });
      const grants = m.rbac.flatMap((o) =>
        (o as { rules?: { resources?: string[] }[] }).rules ?? []
      )
        .flatMap((r) => r.resources ?? []);
      assert.ok(grants.includes("stacks/finalizers"), "the derived ClusterRole grants finalizers");
      await kubectlApply(cp, [...m.operator.filter((o) => o.kind !== "Deployment"), ...m.rbac]);

      // The plugin bites: a user who may create ConfigMaps but not update stacks/finalizers
      // cannot point a blocking ownerReference at a Stack.
      const parent = await admin.create(Stack, {
        metadata: { name: "parent", namespace: "default" },
        spec: { value: "v1" },
      });
      await kubectlApply(
        cp,
        userClusterRole("cm-writer", [
          { apiGroups: [""], resources: ["configmaps"], verbs: ["create", "get"] },
        ]),
      );
      using writer = await createClient({ kubeconfig: await cp.createUser("cm-writer") });
      const refused = await writer.create(ConfigMap, {
        metadata: {
          name: "blocked",
          namespace: "default",
          ownerReferences: [{
            apiVersion: Stack.apiVersion,
            kind: "Stack",
            name: "parent",
            uid: parent.metadata.uid!,
            controller: true,
            blockOwnerDeletion: true,
          }],
        },
      }).then(() => undefined, (e) => e);
      assert.ok(refused instanceof ApiError && isForbidden(refused), String(refused));
      assert.match(refused.message, /blockOwnerDeletion/);

      // The operator's identity with only the generated RBAC reconciles.
      const kubeconfig = await cp.writeKubeconfig({
        user: `system:serviceaccount:${ns}:stack-operator`,
      });
      using sa = await createClient({ kubeconfig, fieldManager: "stack-operator" });
      const stop = new AbortController();
      const manager = createManager({ client: sa, controllers: [controller] });
      const running = manager.start(stop.signal);
      try {
        const cm = await waitFor(
          () =>
            admin.get(ConfigMap, "parent-value", { namespace: "default" }).catch(() => undefined),
          { what: "the owned ConfigMap written by the operator's identity" },
        );
        const ref = cm.metadata.ownerReferences?.[0];
        assert.equal(ref?.uid, parent.metadata.uid);
        assert.equal(ref?.blockOwnerDeletion, true);
      } finally {
        stop.abort();
        await running;
      }
    },
  );

  await t.step(
    "webhook body limit: an UPDATE review over 3 MiB (object + oldObject) is admitted",
    async () => {
      const big = (label: string, path: string) =>
        admission(ConfigMap, {
          name: `${label}.body.kubeno.dev`,
          path,
          validate: () => undefined,
          objectSelector: { matchLabels: { body: label } },
        });
      await using byDefault = await serveWebhooks(admin, [big("default", "/big-default")], {
        name: "body-default",
        namespace: "default",
        local: true,
        port: 0,
      });
      await using small = await serveWebhooks(admin, [big("small", "/big-small")], {
        name: "body-small",
        namespace: "default",
        local: true,
        port: 0,
        server: { maxBodyBytes: 3 * 1024 * 1024 },
      });
      void byDefault, small;
      // 450,000 '<' are 450 kB in the object and 2.7 MB in the review: the API server's
      // JSON escapes '<' as \u003c. An UPDATE carries two copies: about 5.4 MB.
      const value = "<".repeat(450_000);
      const roundTrip = async (label: string) => {
        const name = uniqueName(`body-${label}`);
        await waitFor(
          () =>
            admin.create(ConfigMap, {
              metadata: { name, namespace: "default", labels: { body: label } },
              data: { value },
            }).then(() => true),
          { what: `the ${label} webhook to admit a CREATE` },
        );
        return await admin.patch(ConfigMap, name, { data: { more: "x" } }, {
          namespace: "default",
        }).then(() => "admitted", (e: Error) => e.message);
      };
      assert.equal(await roundTrip("default"), "admitted");
      // The same UPDATE against the old 3 MiB limit: the server answers 413, a failed call,
      // and failurePolicy Fail refuses it. This shows the review really is over 3 MiB.
      assert.match(await roundTrip("small"), /failed calling webhook|413/);
    },
  );

  await t.step(
    "webhook deadline: a handler out of time is a failed call; failurePolicy decides",
    async () => {
      const hang = (policy: "Ignore" | "Fail") =>
        admission(ConfigMap, {
          name: `${policy.toLowerCase()}.slow.kubeno.dev`,
          path: `/slow-${policy.toLowerCase()}`,
          failurePolicy: policy,
          timeoutSeconds: 10,
          objectSelector: { matchLabels: { slow: policy.toLowerCase() } },
          validate: (ctx) =>
            new Promise<undefined>((resolve) =>
              ctx.signal.addEventListener("abort", () => resolve(undefined), { once: true })
            ),
        });
      // The handler's own deadline (500 ms) comes well before the API server's (10 s).
      await using _running = await serveWebhooks(admin, [hang("Ignore"), hang("Fail")], {
        name: "slow",
        namespace: "default",
        local: true,
        port: 0,
        server: { requestTimeoutMs: 500 },
      });
      const create = (label: string) =>
        admin.create(ConfigMap, {
          metadata: {
            generateName: `slow-${label}-`,
            namespace: "default",
            labels: { slow: label },
          },
        });
      const ignored = await waitFor(() => create("ignore").catch(() => undefined), {
        what: "a CREATE under failurePolicy Ignore to be admitted",
      });
      assert.ok(ignored.metadata.name);
      const failed = await create("fail").then(() => undefined, (e: Error) => e);
      assert.ok(failed, "failurePolicy Fail refuses");
      // The handler's own answer (HTTP 504 at its 500 ms deadline), relayed by the API server,
      // not the API server giving up after its 10 s.
      assert.match(
        failed!.message,
        /failed calling webhook "vfail\.slow\.kubeno\.dev": failed to call webhook: the server was unable to return a response in the time allotted, but may still be processing the request$/,
      );
      // That is how the API server renders the handler's HTTP 504; its own 10 s timeout reads
      // "context deadline exceeded" instead.
      assert.doesNotMatch(failed!.message, /deadline exceeded|Client\.Timeout/);
      assert.doesNotMatch(failed!.message, /denied the request/);
      console.log(`failurePolicy Fail, handler past its deadline: ${failed!.message}`);
    },
  );

  await t.step(
    "certificate Secret RBAC: only the operator's own Secret by name (create unnamed)",
    async () => {
      const ns = "certs-system";
      await admin.create(Namespace, { metadata: { name: ns } });
      const webhook = admission(ConfigMap, { validate: () => undefined });
      const m = operatorManifests({
        name: "certs-operator",
        version: "1.0.0",
        controllers: [],
        crds: [],
        namespace: ns,
        image: "certs-operator:1.0.0",
        webhooks: [webhook],
      });
      await kubectlApply(cp, m.rbac);
      await admin.create(Secret, {
        metadata: { name: "someone-elses", namespace: ns },
        stringData: { password: "x" },
      });
      const kubeconfig = await cp.writeKubeconfig({
        user: `system:serviceaccount:${ns}:certs-operator`,
      });
      using sa = await createClient({ kubeconfig });
      // Create, read back, and renew (update) its own Secret.
      await using certs = await selfManagedCertificates(sa, {
        name: "certs-operator",
        namespace: ns,
        configurations: [],
        validForMs: 4_000,
        renewAt: 0.5,
        caPropagationMs: 100,
      });
      const first = certs.stored.certPem;
      await waitFor(() => certs.stored.certPem !== first, {
        what: "a renewal written to the Secret (get and update by name)",
      });
      const stored = await admin.get(Secret, "certs-operator-webhook-certs", { namespace: ns });
      assert.ok(stored.data?.["tls.crt"]);
      // Nothing else.
      for (
        const attempt of [
          () => sa.get(Secret, "someone-elses", { namespace: ns }),
          () => sa.list(Secret, { namespace: ns }),
          () => sa.patch(Secret, "someone-elses", { data: {} }, { namespace: ns }),
        ]
      ) {
        const err = await attempt().then(() => undefined, (e) => e);
        assert.ok(isForbidden(err), `expected 403, got ${err}`);
      }
    },
  );

  await t.step(
    "/metrics over HTTPS with TokenReview and SubjectAccessReview; :PORT binds IPv6 and IPv4",
    async () => {
      const install = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", WIDGET, "install", `--kubeconfig=${cp.kubeconfigPath}`],
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(install.code, 0, new TextDecoder().decode(install.stderr));
      const metricsPort = freePort();
      const probePort = freePort();
      await using op = new Widgets([
        "run",
        `--kubeconfig=${cp.kubeconfigPath}`,
        `--metrics-bind-address=:${metricsPort}`,
        `--health-probe-bind-address=:${probePort}`,
      ]);
      // Dual stack: the probes answer on IPv4 and IPv6 loopback alike.
      for (const host of ["127.0.0.1", "[::1]"]) {
        await waitFor(async () => {
          const r = await fetch(`http://${host}:${probePort}/healthz`);
          await r.body?.cancel();
          return r.ok;
        }, { timeoutMs: 60_000, what: `/healthz on ${host}; log:\n${op.log}` });
      }
      const url = (host: string) => `https://${host}:${metricsPort}/metrics`;
      // The metrics server starts beside the probe server (it makes its certificate first):
      // the probes answering does not mean it listens yet.
      const anonymous = await waitFor(
        async () => (await httpsGet(url("127.0.0.1"))).status,
        { timeoutMs: 60_000, what: `/metrics on 127.0.0.1; log:\n${op.log}` },
      );
      assert.equal(anonymous, 401, "no token");
      assert.equal(
        (await httpsGet(url("127.0.0.1"), { authorization: "Bearer not-a-token" })).status,
        401,
        "a token the API server does not know",
      );
      // Bind the generated reader role to the scraper, as a Prometheus setup does.
      const m = operatorManifests({
        name: "widget-operator",
        version: "1.0.0",
        controllers: [],
        crds: [],
        namespace: "default",
        image: "x",
      });
      const reader = m.rbac.find((o) => o.metadata.name === "widget-operator-metrics-reader")!;
      await kubectlApply(cp, [reader]);
      const stranger = await httpsGet(url("127.0.0.1"), await serviceAccountToken(cp, "stranger"));
      assert.equal(stranger.status, 403, stranger.body);
      const scraper = await serviceAccountToken(cp, "scraper", "widget-operator-metrics-reader");
      for (const host of ["127.0.0.1", "[::1]"]) {
        const ok = await httpsGet(url(host), scraper);
        assert.equal(ok.status, 200, ok.body);
        assert.match(ok.body, /^rest_client_requests_total\{/m);
      }
      // Plain HTTP on the secure port is refused.
      const plain = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
        async (r) => {
          await r.body?.cancel();
          return r.status;
        },
        () => "refused",
      );
      assert.notEqual(plain, 200);
    },
  );

  await t.step("/metrics stays available over plain HTTP with --metrics-secure=false", async () => {
    const metricsPort = freePort();
    await using op = new Widgets([
      "run",
      `--kubeconfig=${cp.kubeconfigPath}`,
      "--metrics-secure=false",
      `--metrics-bind-address=:${metricsPort}`,
      "--health-probe-bind-address=0",
    ]);
    const text = await waitFor(async () => {
      const r = await fetch(`http://[::1]:${metricsPort}/metrics`);
      return r.ok ? await r.text() : undefined;
    }, { timeoutMs: 60_000, what: `plain /metrics; log:\n${op.log}` });
    assert.match(text, /^process_start_time_seconds /m);
  });

  await t.step(
    "watch health: a connection that fails after more than a second backs off and shows in /healthz",
    async () => {
      await using proxy = await startFaultProxy({ target: cp.server });
      using viaProxy = await createClient({
        kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
      });
      const ns = "slow-failures";
      await admin.create(Namespace, { metadata: { name: ns } });
      await using inf = informer(ConfigMap, {
        client: viaProxy,
        namespace: ns,
        backoff: { initialMs: 200, maxMs: 2_000, jitter: 0 },
      }).start();
      await inf.synced();
      // The watch delivers an event, so cutting it below is a healthy break (resumed at once,
      // no error): any error after that comes from the reconnects.
      await admin.create(ConfigMap, { metadata: { name: "seen", namespace: ns } });
      await waitFor(() => inf.get({ name: "seen", namespace: ns }), { what: "a watch event" });
      const failures: string[] = [];
      const checks = new HealthChecks({
        onFailure: (_kind, results) => {
          for (const r of results) if (!r.ok) failures.push(String(r.error));
        },
      }).addHealthz("watches", watchesNotStalled(() => [inf], { maxSilenceMs: 1_000 }));
      await using probes = await serveProbes(checks, { address: "127.0.0.1:0" });

      // Every new connection now hangs 1.5 s without a byte (a TLS handshake that never
      // completes), then closes; the watch's own connection is cut.
      proxy.failNewConnections(1_500);
      proxy.dropAll();
      const before = proxy.acceptedConnections;
      const error = await waitFor(() => inf.health().error, {
        timeoutMs: 30_000,
        what: "the failing reconnects to be reported as a watch error",
      });
      assert.equal(inf.health().healthy, false);
      const body = await waitFor(async () => {
        const res = await fetch(`${probes!.url}healthz?verbose`);
        const text = await res.text();
        return res.status === 500 ? text : undefined;
      }, { what: "/healthz to fail" });
      assert.match(body, /\[-\]watches failed/);
      assert.ok(
        failures.some((f) => f.includes("retrying after:")),
        `the logged reason names the watch's failure: ${failures.join("; ")}`,
      );
      // Backing off: attempts spread out (each takes 1.5 s; the delays grow from 200 ms).
      const tries = proxy.acceptedConnections - before;
      console.log(`watch health: ${tries} attempts before the error surfaced: ${error.message}`);

      proxy.failNewConnections(undefined);
      await admin.create(ConfigMap, { metadata: { name: "after-outage", namespace: ns } });
      await waitFor(() => inf.get({ name: "after-outage", namespace: ns }), {
        timeoutMs: 30_000,
        what: "the watch to recover through the proxy",
      });
      await waitFor(() => !inf.health().error, { what: "the error to clear" });
    },
  );

  await t.step(
    "informer: a transform or index function that throws during a relist leaves the store whole",
    async () => {
      const ns = "relist";
      await admin.create(Namespace, { metadata: { name: ns } });
      const cm = (name: string, v: string, labels?: Record<string, string>) =>
        admin.create(ConfigMap, { metadata: { name, namespace: ns, labels }, data: { v } });
      for (const name of ["b-keep", "m-change", "z-gone"]) await cm(name, "1");
      await using proxy = await startFaultProxy({ target: cp.server });
      using viaProxy = await createClient({
        kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
      });
      await using inf = informer(ConfigMap, {
        client: viaProxy,
        namespace: ns,
        backoff: { initialMs: 200, maxMs: 1_000 },
        transform: (o) => {
          if (o.metadata.labels?.boom === "transform") throw new Error("transform refused it");
          return o;
        },
        indexes: {
          v: (o) => {
            if (o.metadata.labels?.boom === "index") throw new Error("index refused it");
            return [o.data?.v ?? ""];
          },
        },
      }).start();
      await inf.synced();
      // The informer's connection goes silent: it sees none of what follows as events.
      proxy.stall(true);
      // Named to come first in the list, before the objects the relist must still apply.
      await cm("a-boom-index", "1", { boom: "index" });
      await cm("a-boom-transform", "1", { boom: "transform" });
      await admin.patch(ConfigMap, "m-change", { data: { v: "2" } }, { namespace: ns });
      await admin.delete(ConfigMap, "z-gone", { namespace: ns });
      await cm("n-new", "3");
      // History gone: resuming from the informer's resourceVersion gets 410, so it relists.
      await cp.compactEtcd();
      await cp.restartApiServer();
      proxy.stall(false);
      await waitFor(() => inf.get({ name: "n-new", namespace: ns }), {
        timeoutMs: 60_000,
        what: "the relist to be applied",
      });
      const names = inf.list().map((o) => o.metadata.name).sort();
      assert.deepEqual(names, ["b-keep", "m-change", "n-new"]);
      assert.equal(inf.get({ name: "m-change", namespace: ns })?.data?.v, "2");
      assert.deepEqual(inf.store.byIndex("v", "1").map((o) => o.metadata.name), ["b-keep"]);
      assert.deepEqual(inf.store.byIndex("v", "2").map((o) => o.metadata.name), ["m-change"]);
      assert.deepEqual(inf.store.indexValues("v").sort(), ["1", "2", "3"]);
      assert.equal(inf.hasSynced, true);
    },
  );

  await t.step(
    "conditions: a condition another writer set while a reconcile ran is never lost",
    async () => {
      const ns = "conditions";
      await admin.create(Namespace, { metadata: { name: ns } });
      // Every version of the object, as the API server stored it.
      const history: string[][] = [];
      await using seen = informer(Stack, { client: admin, namespace: ns }).start();
      seen.onEvent((ev) => {
        if (ev.type !== "deleted") {
          history.push((ev.object.status?.conditions ?? []).map((c) => c.type).sort());
        }
      });
      const reached = Promise.withResolvers<void>();
      const gate = Promise.withResolvers<void>();
      let reconciles = 0;
      const controller = reconcile(Stack, {
        name: "stack-conditions",
        async reconcile(stack, ctx) {
          if (++reconciles === 1) {
            // Hold the first reconcile with the object as it was read.
            reached.resolve();
            await gate.promise;
          }
          await ctx.setCondition(stack, {
            type: "Ready",
            status: "True",
            reason: "Reconciled",
            message: `value ${stack.spec.value}`,
          });
        },
      });
      const stop = new AbortController();
      const running = createManager({ client: admin, controllers: [controller], namespaces: [ns] })
        .start(stop.signal);
      try {
        await admin.create(Stack, { metadata: { name: "s", namespace: ns }, spec: { value: "1" } });
        await reached.promise;
        // Another controller sets its own condition meanwhile.
        await admin.patchStatus(Stack, "s", {
          status: {
            conditions: [{
              type: "External",
              status: "True",
              reason: "Other",
              message: "set by another writer",
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
            }],
          },
        }, { namespace: ns });
        gate.resolve();
        await waitFor(async () => {
          const s = await admin.get(Stack, "s", { namespace: ns });
          const types = (s.status?.conditions ?? []).map((c) => c.type).sort();
          return types.join() === "External,Ready";
        }, { what: "both conditions on the object" });
        // The harness's own watch may be behind that read: wait until it delivered the
        // version with both, so the history below is complete up to there.
        await waitFor(() => history.some((v) => v.join() === "External,Ready"), {
          what: "the harness's watch to show both conditions",
        });
        const external = history.findIndex((v) => v.includes("External"));
        assert.ok(external >= 0);
        for (const v of history.slice(external)) {
          assert.ok(v.includes("External"), `a later version lost it: ${JSON.stringify(history)}`);
        }
        console.log(
          `conditions: ${reconciles} reconciles; versions seen: ${JSON.stringify(history)}`,
        );
      } finally {
        gate.resolve();
        stop.abort();
        await running;
      }
    },
  );

  await t.step(
    "trust: which roots the API server connection trusts (measured; the limit is documented)",
    async () => {
      // A kubeconfig whose CA is not the API server's: client-go refuses the connection.
      const other = await createCa("not-the-api-servers-ca");
      const kubeconfig = `${cp.dir}/other-ca.kubeconfig`;
      await Deno.writeTextFile(
        kubeconfig,
        (await Deno.readTextFile(cp.kubeconfigPath)).replace(
          /certificate-authority-data: \S+/,
          `certificate-authority-data: ${btoa(other.certPem)}`,
        ),
      );
      const caFile = `${cp.dir}/api-server-ca.pem`;
      await Deno.writeTextFile(caFile, cp.caCertPem);
      const probe = async (env: Record<string, string>) => {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "--quiet", TLS_PROBE, kubeconfig],
          env: { NO_COLOR: "1", ...env },
          clearEnv: true,
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        return JSON.parse(new TextDecoder().decode(out.stdout)) as Record<string, string>;
      };
      const path = { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "" };
      // The API server's CA is no root of the runtime: both refuse, as client-go does.
      const plain = await probe(path);
      assert.match(plain.kubeno, /^refused: .*UnknownIssuer/);
      assert.match(plain["node:https"], /^refused/);
      // Made a root of the runtime, as a corporate or a public CA is: Deno's fetch adds the
      // kubeconfig's CA to those roots and connects; node:https with `ca` trusts `ca` only.
      const roots: Record<string, string>[] = [
        { DENO_TLS_CA_STORE: "system", SSL_CERT_FILE: caFile, SSL_CERT_DIR: "/nonexistent" },
        { DENO_CERT: caFile },
        { NODE_EXTRA_CA_CERTS: caFile },
      ];
      for (const env of roots) {
        const r = await probe({ ...path, ...env });
        console.log(`trust with ${Object.keys(env).join(",")}: ${JSON.stringify(r)}`);
        assert.equal(r.kubeno, "connected", "the documented limit of Deno's fetch");
        assert.match(r["node:https"], /^refused/);
      }
    },
  );

  await t.step(
    "shutdown: a reconcile that never ends still leaves time to release the Lease",
    async () => {
      const lease = "/apis/coordination.k8s.io/v1/namespaces/default/leases/widget-operator";
      await using op = new Widgets([
        "run",
        `--kubeconfig=${cp.kubeconfigPath}`,
        "--leader-elect",
        "--leader-elect-namespace=default",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
        "--graceful-shutdown-timeout=1s",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--log-format=json",
      ]);
      await waitFor(async () => {
        const r = await cp.request("GET", lease);
        return r.status === 200 && r.body.spec?.holderIdentity;
      }, { timeoutMs: 60_000, what: `the Lease to be held; log:\n${op.log}` });
      // Reconciled 10 minutes after it is read: in flight at SIGTERM, never done in time.
      await admin.request("POST", "/apis/widgets.kubeno.dev/v1/namespaces/default/widgets", {
        body: {
          apiVersion: "widgets.kubeno.dev/v1",
          kind: "Widget",
          metadata: {
            name: "slow",
            annotations: { "widgets.kubeno.dev/reconcile-delay-ms": "600000" },
          },
          spec: { size: 1 },
        },
      });
      await waitFor(() => op.log.includes("Waiting 600000 ms before writing"), {
        what: "the slow reconcile to be in flight",
      });
      const sent = performance.now();
      op.proc.kill("SIGTERM");
      const released = await waitFor(async () => {
        const r = await cp.request("GET", lease);
        return r.body.spec?.holderIdentity === "" ? performance.now() : undefined;
      }, { timeoutMs: 60_000, what: `the Lease to be released; log:\n${op.log}` });
      // The API server can show the release before the operator's pipe has carried the line.
      await waitFor(() => op.log.includes("Released lease"), {
        what: `the release to be logged; log:\n${op.log}`,
      });
      assert.match(op.log, /did not finish in time/);
      const lines = op.log.split("\n");
      const gaveUp = lines.findIndex((l) => l.includes("did not finish in time"));
      const release = lines.findIndex((l) => l.includes("Released lease"));
      assert.ok(gaveUp >= 0 && release > gaveUp, "released after the drain deadline");
      console.log(
        `shutdown: Lease released ${(released - sent).toFixed(0)} ms after SIGTERM ` +
          "(drain deadline 1 s, renew deadline 2 s)",
      );
    },
  );
});
