// An API version change end to end, driven as a user drives it against a real control plane:
// the Myapp operator's release 0.1.0 (examples/myapp.ts, v1alpha1 only) installed and holding
// objects, then release 0.2.0 (examples/myapp_v1.ts: v1 stored, v1alpha1 served and
// deprecated) installed and run outside the cluster, serving the conversion webhook.
//
// Shows: objects created at either version read back at the other with the same meaning
// (kubectl get myapps.v1alpha1.apps.kubeno.dev / .v1.); a field new in v1 survives
// v1 → v1alpha1 → v1, also across an edit at v1alpha1; the deprecation warning reaches kubectl;
// with the conversion webhook down, reads that need it fail with the API server's message
// naming the webhook, and nothing is lost once it is back; `migrate-storage` leaves
// status.storedVersions holding only v1 and is safe to re-run; fuzzed ConversionReviews sent
// to the running operator never crash it.
import assert from "node:assert/strict";
import { createClient, Deployment } from "../mod.ts";
import { CustomResourceDefinition } from "../core.ts";
import { createCa, startControlPlane } from "../testing.ts";
import { CONVERSION_DATA_ANNOTATION } from "../schema.ts";
import { Myapp, MyappV1alpha1 } from "../examples/myapp_v1.ts";
import { patchConversionWebhooks } from "../webhook.ts";
import { type RunningProcess, spawnLogged, waitFor } from "./_helpers.ts";
import { assertDefaultPortsFree } from "./_ports.ts";
import { MYAPP_SAMPLE as SAMPLE } from "./_examples.ts";

// The README's commands, typed in the checkout with the cluster in KUBECONFIG:
// `deno run -A examples/myapp_v1.ts install`, `deno run -A examples/myapp_v1.ts` (run, with
// its default ports: this file runs under `flock /tmp/kubeno-ports.lock`), `... migrate-storage`.
const ROOT = new URL("..", import.meta.url).pathname;
const V0 = "examples/myapp.ts";
const V1 = "examples/myapp_v1.ts";
const NS = "default";
const CRD = "myapps.apps.kubeno.dev";
const WARNING =
  "Warning: apps.kubeno.dev/v1alpha1 Myapp is deprecated; use apps.kubeno.dev/v1 (port is now ports)";
const baseEnv = { NO_COLOR: "1", POD_NAMESPACE: "", WATCH_NAMESPACE: "" };
const dec = new TextDecoder();

Deno.test("Myapp v1alpha1 → v1: conversion, deprecation, webhook down, storage migration", async (t) => {
  await assertDefaultPortsFree();
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const env = { ...baseEnv, KUBECONFIG: cp.kubeconfigPath };
  const dir = await Deno.makeTempDir({ prefix: "kubeno-multiversion-" });
  const running: RunningProcess[] = [];

  const op = async (program: string, ...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", program, ...args],
      cwd: ROOT,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const start = (program: string): RunningProcess => {
    const s = spawnLogged(Deno.execPath(), ["run", "-A", "--quiet", program], { cwd: ROOT, env });
    running.push(s);
    return s;
  };
  const stop = async (s: RunningProcess, signal: Deno.Signal) => {
    const status = await s.stop(signal);
    running.splice(running.indexOf(s), 1);
    return status;
  };
  const kubectl = async (...args: string[]) => {
    const r = await cp.kubectl(...args);
    return {
      ...r,
      json: r.code === 0 && r.stdout.startsWith("{") ? JSON.parse(r.stdout) : undefined,
    };
  };
  const at = (version: "v1" | "v1alpha1") => `myapps.${version}.apps.kubeno.dev`;
  const getAt = async (version: "v1" | "v1alpha1", name: string) => {
    const r = await kubectl("get", at(version), name, "-n", NS, "-o", "json");
    if (r.code !== 0) throw new Error(r.stderr.trim());
    return { object: r.json, stderr: r.stderr };
  };
  const applyFile = async (name: string, object: unknown) => {
    const path = `${dir}/${name}.json`;
    await Deno.writeTextFile(path, JSON.stringify(object));
    return kubectl("apply", "-f", path);
  };
  const storedVersions = async () =>
    (await client.get(CustomResourceDefinition, CRD)).status?.storedVersions ?? [];

  try {
    await t.step("release 0.1.0 holds objects stored at v1alpha1", async () => {
      const r = await op(V0, "install");
      assert.equal(r.code, 0, r.stderr);
      const v0 = start(V0);
      await waitFor(async () => {
        const a = await kubectl("apply", "-f", SAMPLE);
        if (a.code !== 0) throw new Error(a.stderr.trim());
        return true;
      }, { timeoutMs: 60_000, intervalMs: 250, what: "the v1alpha1 sample to be admitted" });
      assert.equal((await stop(v0, "SIGTERM")).code, 0, v0.logs());
      assert.deepEqual(await storedVersions(), ["v1alpha1"]);
    });

    let v1: RunningProcess | undefined;
    await t.step("release 0.2.0 installs v1 (stored) beside v1alpha1 (deprecated)", async () => {
      const r = await op(V1, "install");
      assert.equal(r.code, 0, r.stderr);
      const crd = await client.get(CustomResourceDefinition, CRD);
      assert.deepEqual(
        crd.spec.versions.map((v) => [v.name, v.served, v.storage, v.deprecated ?? false]),
        [["v1", true, true, false], ["v1alpha1", true, false, true]],
      );
      assert.equal(crd.spec.conversion?.strategy, "Webhook");
      assert.deepEqual(await storedVersions(), ["v1alpha1", "v1"]);
      v1 = start(V1);
    });

    await t.step("an object created at v1alpha1 reads back at v1", async () => {
      // The operator takes the CRD's conversion webhook over by URL once it serves.
      const { object } = await waitFor(() => getAt("v1", "myapp-sample"), {
        timeoutMs: 90_000,
        intervalMs: 250,
        what: "myapp-sample to be readable at v1",
      });
      assert.equal(object.apiVersion, "apps.kubeno.dev/v1");
      assert.deepEqual(object.spec, {
        image: "nginx:1.27",
        replicas: 2,
        ports: [{ name: "http", containerPort: 8080 }],
      });
      const url = (await client.get(CustomResourceDefinition, CRD)).spec.conversion?.webhook
        ?.clientConfig?.url;
      assert.match(url ?? "", /^https:\/\/127\.0\.0\.1:\d+\/convert$/);
      // And at v1alpha1, where it lives: same meaning, nothing to keep aside.
      const old = await getAt("v1alpha1", "myapp-sample");
      assert.deepEqual(old.object.spec, { image: "nginx:1.27", replicas: 2, port: 8080 });
      assert.equal(old.object.metadata.annotations?.[CONVERSION_DATA_ANNOTATION], undefined);
    });

    await t.step("the deprecated version's warning reaches kubectl", async () => {
      const r = await kubectl("get", at("v1alpha1"), "-n", NS);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stderr.includes(WARNING), r.stderr);
      const v1Read = await kubectl("get", at("v1"), "-n", NS);
      assert.equal(v1Read.code, 0, v1Read.stderr);
      assert.doesNotMatch(v1Read.stderr, /deprecated/);
    });

    let fresh: Record<string, unknown> = {};
    await t.step(
      "a field new in v1 survives v1 → v1alpha1 → v1, across an edit at v1alpha1",
      async () => {
        const created = await applyFile("fresh-v1", {
          apiVersion: "apps.kubeno.dev/v1",
          kind: "Myapp",
          metadata: { name: "fresh", namespace: NS },
          spec: {
            image: "nginx:1.27",
            replicas: 1,
            ports: [{ name: "web", containerPort: 80 }, { name: "metrics", containerPort: 9090 }],
            nodeSelector: { disk: "ssd" },
          },
        });
        assert.equal(created.code, 0, created.stderr);
        // A whole-object write at v1alpha1 (what kubectl edit does), with an edit. The
        // operator writes the new object meanwhile (its finalizer, its status), and a write
        // guarded by an older resourceVersion is refused with a conflict: read again and
        // redo the edit then, as a user of kubectl edit does.
        let replaced: Awaited<ReturnType<typeof kubectl>> | undefined;
        for (let attempt = 0; attempt < 10; attempt++) {
          const old = await getAt("v1alpha1", "fresh");
          assert.deepEqual(old.object.spec, { image: "nginx:1.27", replicas: 1, port: 80 });
          const kept = JSON.parse(old.object.metadata.annotations[CONVERSION_DATA_ANNOTATION]);
          assert.deepEqual(kept.spec.nodeSelector, { disk: "ssd" });
          old.object.spec.replicas = 3;
          delete old.object.metadata.managedFields;
          const path = `${dir}/fresh-v1alpha1.json`;
          await Deno.writeTextFile(path, JSON.stringify(old.object));
          replaced = await kubectl("replace", "-f", path);
          if (!/the object has been modified/.test(replaced.stderr)) break;
        }
        assert.equal(replaced!.code, 0, replaced!.stderr);
        const back = await getAt("v1", "fresh");
        assert.deepEqual(back.object.spec, {
          image: "nginx:1.27",
          replicas: 3,
          ports: [{ name: "web", containerPort: 80 }, { name: "metrics", containerPort: 9090 }],
          nodeSelector: { disk: "ssd" },
        });
        assert.equal(back.object.metadata.annotations?.[CONVERSION_DATA_ANNOTATION], undefined);
        // A merge patch at v1alpha1 keeps them too.
        const patched = await kubectl(
          "patch",
          at("v1alpha1"),
          "fresh",
          "-n",
          NS,
          "--type=merge",
          "-p",
          '{"spec":{"replicas":2}}',
        );
        assert.equal(patched.code, 0, patched.stderr);
        const again = await getAt("v1", "fresh");
        assert.equal(again.object.spec.replicas, 2);
        assert.deepEqual(again.object.spec.nodeSelector, { disk: "ssd" });
        assert.equal(again.object.spec.ports.length, 2);
        fresh = again.object.spec;
        // The controller reconciles at v1: its Deployment carries what only v1 can say.
        const dep = await waitFor(async () => {
          const d = await client.get(Deployment, "fresh", { namespace: NS }).catch(() => undefined);
          return d?.spec?.replicas === 2 ? d : undefined;
        }, { timeoutMs: 60_000, what: "the Deployment of fresh with 2 replicas" });
        assert.deepEqual(dep.spec?.template.spec?.nodeSelector, { disk: "ssd" });
        assert.deepEqual(
          dep.spec?.template.spec?.containers[0].ports?.map((p) => p.containerPort),
          [80, 9090],
        );
      },
    );

    await t.step("typed clients at either version see the same objects", async () => {
      const apps = await client.list(Myapp, { namespace: NS });
      const olds = await client.list(MyappV1alpha1, { namespace: NS });
      assert.deepEqual(apps.items.map((a) => a.metadata.name).sort(), ["fresh", "myapp-sample"]);
      assert.deepEqual(olds.items.map((a) => [a.metadata.name, a.spec.replicas]).sort(), [
        ["fresh", 2],
        ["myapp-sample", 2],
      ]);
    });

    await t.step("fuzzed ConversionReviews never crash the running operator", async () => {
      const crd = await client.get(CustomResourceDefinition, CRD);
      const cc = crd.spec.conversion!.webhook!.clientConfig!;
      using http = Deno.createHttpClient({ caCerts: [atob(cc.caBundle!)] });
      let seed = 1717;
      const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
      const junk = (depth: number): unknown => {
        const leaves = [null, false, 0, 1.5, "", "apps.kubeno.dev/v1", "Myapp", [], {}];
        if (depth <= 0 || rand() < 0.3) return pick(leaves);
        const keys = ["apiVersion", "kind", "metadata", "spec", "uid", "objects", "image", "port"];
        return Object.fromEntries(
          Array.from({ length: Math.floor(rand() * 4) }, () => [pick(keys), junk(depth - 1)]),
        );
      };
      const object = {
        apiVersion: "apps.kubeno.dev/v1alpha1",
        kind: "Myapp",
        metadata: { name: "f", namespace: NS },
        spec: { image: "i", replicas: 1, port: 1 },
      };
      const statuses = new Map<string, number>();
      const n = 400;
      for (let i = 0; i < n; i++) {
        const review: Record<string, any> = {
          apiVersion: "apiextensions.k8s.io/v1",
          kind: "ConversionReview",
          request: { uid: `u${i}`, desiredAPIVersion: "apps.kubeno.dev/v1", objects: [object] },
        };
        const where = pick(["request", "uid", "objects", "object", "spec", "metadata", "desired"]);
        const r = review.request;
        if (where === "request") review.request = junk(3);
        else if (where === "uid") r.uid = junk(2);
        else if (where === "objects") r.objects = junk(2);
        else if (where === "object") r.objects = [junk(3)];
        else if (where === "spec") r.objects = [{ ...object, spec: junk(3) }];
        else if (where === "metadata") r.objects = [{ ...object, metadata: junk(2) }];
        else r.desiredAPIVersion = junk(1);
        const text = rand() < 0.1
          ? JSON.stringify(review).slice(0, Math.floor(rand() * 80))
          : JSON.stringify(review);
        const res = await fetch(cc.url!, { method: "POST", body: text, client: http });
        const body = await res.text();
        let key = String(res.status);
        if (res.status === 200) key += ` ${JSON.parse(body).response.result.status}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        assert.ok([200, 400].includes(res.status), `status ${res.status}: ${body}`);
      }
      console.log(
        `fuzz: ${n} mangled ConversionReviews: ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
      // Still serving: the API server's own conversions keep working.
      assert.equal(v1!.exited(), undefined, `the operator exited:\n${v1!.logs()}`);
      assert.equal((await getAt("v1alpha1", "fresh")).object.spec.port, 80);
    });

    await t.step(
      "with the conversion webhook down, reads fail clearly and nothing is lost",
      async () => {
        const before = {
          sample: (await getAt("v1", "myapp-sample")).object.spec,
          freshOld: (await getAt("v1alpha1", "fresh")).object.spec,
        };
        // Killed: no hand-back, the CRD still names the dead URL.
        await stop(v1!, "SIGKILL");
        const down = await kubectl("get", at("v1alpha1"), "fresh", "-n", NS, "-o", "json");
        assert.notEqual(down.code, 0);
        assert.match(
          down.stderr,
          /conversion webhook for apps\.kubeno\.dev\/v1, Kind=Myapp failed: Post "https:\/\/127\.0\.0\.1:\d+\/convert\?timeout=30s": dial tcp 127\.0\.0\.1:\d+: connect: connection refused/,
        );
        console.log(`webhook down, kubectl get ${at("v1alpha1")} fresh: ${down.stderr.trim()}`);
        // An object still stored at v1alpha1 cannot be read at v1 either; the migration says why.
        const sampleDown = await kubectl("get", at("v1"), "myapp-sample", "-n", NS);
        assert.notEqual(sampleDown.code, 0);
        assert.match(
          sampleDown.stderr,
          /conversion webhook for apps\.kubeno\.dev\/v1alpha1, Kind=Myapp failed/,
        );
        const migrate = await op(V1, "migrate-storage");
        assert.equal(migrate.code, 1, migrate.stderr);
        assert.match(
          migrate.stderr,
          /^myapp-operator: Cannot migrate myapps\.apps\.kubeno\.dev to v1: .*(conversion webhook for|failed calling webhook).*; the operator serves the conversion and admission webhooks this needs: start it \("run", or its Deployment\) and retry\n$/,
        );
        console.log(
          `webhook down, migrate-storage (exit ${migrate.code}): ${migrate.stderr.trim()}`,
        );
        assert.deepEqual(await storedVersions(), ["v1alpha1", "v1"]);
        // Back up: the new run takes the webhook over again and every object reads as before.
        v1 = start(V1);
        const sample = await waitFor(() => getAt("v1", "myapp-sample"), {
          timeoutMs: 90_000,
          intervalMs: 250,
          what: "myapp-sample readable at v1 again",
        });
        assert.deepEqual(sample.object.spec, before.sample);
        assert.deepEqual((await getAt("v1alpha1", "fresh")).object.spec, before.freshOld);
        assert.deepEqual((await getAt("v1", "fresh")).object.spec, fresh);
      },
    );

    await t.step(
      "migrate-storage rewrites at v1, trims storedVersions, is safe to re-run",
      async () => {
        const first = await op(V1, "migrate-storage");
        assert.equal(first.code, 0, first.stderr);
        assert.equal(
          first.stdout.trim(),
          `customresourcedefinition.apiextensions.k8s.io/${CRD} 2 objects rewritten at v1; ` +
            "status.storedVersions [v1alpha1, v1] -> [v1]",
        );
        assert.deepEqual(await storedVersions(), ["v1"]);
        const second = await op(V1, "migrate-storage");
        assert.equal(second.code, 0, second.stderr);
        assert.equal(
          second.stdout.trim(),
          `customresourcedefinition.apiextensions.k8s.io/${CRD} stored at v1 only: nothing to migrate`,
        );
        console.log(`migrate-storage: ${first.stdout.trim()}\nagain: ${second.stdout.trim()}`);
      },
    );

    await t.step("a graceful stop hands the conversion webhook back to the Service", async () => {
      assert.equal((await stop(v1!, "SIGTERM")).code, 0, v1!.logs());
      const crd = await client.get(CustomResourceDefinition, CRD);
      assert.deepEqual(crd.spec.conversion?.webhook?.clientConfig?.service, {
        namespace: "myapp-operator-system",
        name: "myapp-operator-webhook",
        path: "/convert",
        port: 443,
      });
      assert.equal(crd.metadata.annotations?.["kubeno.dev/saved-by-local-run"], undefined);
      // Stored at v1 now: v1 reads need no webhook; v1alpha1 reads still do, and say so.
      const v1Read = await getAt("v1", "fresh");
      assert.equal(v1Read.object.spec.replicas, 2);
      const oldRead = await kubectl("get", at("v1alpha1"), "fresh", "-n", NS);
      assert.notEqual(oldRead.code, 0);
      assert.match(
        oldRead.stderr,
        /conversion webhook for apps\.kubeno\.dev\/v1, Kind=Myapp failed: .*service "myapp-operator-webhook" not found/,
      );
    });

    await t.step(
      "the next local run, or install, repairs what a killed local run left; in a cluster the operator points the CRD at its Service",
      async () => {
        const takenOver = () =>
          waitFor(async () => {
            const c = await client.get(CustomResourceDefinition, CRD);
            return c.spec.conversion?.webhook?.clientConfig?.url !== undefined;
          }, { timeoutMs: 90_000, intervalMs: 250, what: "the local run's take-over" });
        // README: the next local run restores what a killed one saved, when it stops.
        const killed = start(V1);
        await takenOver();
        await stop(killed, "SIGKILL");
        const next = start(V1);
        // The CRD still names the killed run's URL, the same as the next run's: wait for the
        // next run's own word that it registered (serveWebhooks has returned).
        await waitFor(() => next.logs().includes("Serving admission webhooks at"), {
          timeoutMs: 90_000,
          what: "the next local run to serve and register",
        });
        assert.equal((await stop(next, "SIGTERM")).code, 0, next.logs());
        const handedBack = await client.get(CustomResourceDefinition, CRD);
        assert.equal(handedBack.spec.conversion?.webhook?.clientConfig?.url, undefined);
        assert.equal(
          handedBack.spec.conversion?.webhook?.clientConfig?.service?.name,
          "myapp-operator-webhook",
        );
        assert.equal(handedBack.metadata.annotations?.["kubeno.dev/saved-by-local-run"], undefined);
        // And `install` repairs what a killed run left.
        const again = start(V1);
        await takenOver();
        await stop(again, "SIGKILL");
        const install = await op(V1, "install");
        assert.equal(install.code, 0, install.stderr);
        assert.match(
          install.stdout,
          /customresourcedefinition\.apiextensions\.k8s\.io\/myapps\.apps\.kubeno\.dev conversion webhook restored \(a local run had left it pointing at itself\)/,
        );
        const crd = await client.get(CustomResourceDefinition, CRD);
        assert.equal(crd.spec.conversion?.webhook?.clientConfig?.url, undefined);
        assert.equal(
          crd.spec.conversion?.webhook?.clientConfig?.service?.name,
          "myapp-operator-webhook",
        );
        assert.equal(crd.metadata.annotations?.["kubeno.dev/saved-by-local-run"], undefined);
        // What the operator does at start in a cluster (installed elsewhere than the manifests
        // said): its own namespace and CA bundle; a second time changes nothing.
        const target = { service: { namespace: "ops", name: "myapp-operator-webhook" } };
        const ca = (await createCa("multiversion-test")).certPem;
        assert.equal(await patchConversionWebhooks(client, [CRD], { target, caBundlePem: ca }), 1);
        assert.equal(await patchConversionWebhooks(client, [CRD], { target, caBundlePem: ca }), 0);
        const patched = (await client.get(CustomResourceDefinition, CRD)).spec.conversion?.webhook
          ?.clientConfig;
        assert.deepEqual(patched, {
          service: {
            namespace: "ops",
            name: "myapp-operator-webhook",
            path: "/convert",
            port: 443,
          },
          caBundle: btoa(ca),
        });
      },
    );
  } finally {
    for (const s of [...running]) await stop(s, "SIGKILL").catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
