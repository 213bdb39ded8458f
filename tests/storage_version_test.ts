// The storage version as its own setting, on a real control plane: examples/myapp_v1.ts (v1 the
// hub and stored) holds objects; a copy that differs in exactly one line (`storage: "v1alpha1"`)
// is installed and run; the controller and the webhooks keep working at the hub; `migrate-storage`
// rewrites every object at the new storage version, shown by reading them at v1alpha1 with the
// conversion webhook down. Then an object that does not convert to a new storage version
// (tests/fixtures/tick_operator.ts) is named by `migrate-storage`. Also: examples/cronjob.ts's
// jobOwner matches owner references by group and kind, whatever version they name.
import assert from "node:assert/strict";
import { createClient, Deployment } from "../mod.ts";
import { CustomResourceDefinition } from "../core.ts";
import { startControlPlane } from "../testing.ts";
import { jobOwner } from "../examples/cronjob.ts";
import { Tick } from "./fixtures/tick_operator.ts";
import { NO_SERVERS, runArgv, waitFor } from "./_helpers.ts";

const V1 = new URL("../examples/myapp_v1.ts", import.meta.url).pathname;
const TICK = new URL("./fixtures/tick_operator.ts", import.meta.url).pathname;
const CRD = "myapps.apps.kubeno.dev";
const env = { NO_COLOR: "1", KUBECONFIG: "/nonexistent", POD_NAMESPACE: "", WATCH_NAMESPACE: "" };
const dec = new TextDecoder();

Deno.test("jobOwner matches a CronJob owner by group and kind, at any version", () => {
  const job = (apiVersion: string, kind = "CronJob") => ({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: "j",
      namespace: "ns",
      ownerReferences: [{ apiVersion, kind, name: "c", uid: "u", controller: true }],
    },
  });
  assert.deepEqual(jobOwner(job("batch.kubeno.dev/v1")), ["ns/c"]);
  assert.deepEqual(jobOwner(job("batch.kubeno.dev/v2beta1")), ["ns/c"]);
  assert.deepEqual(jobOwner(job("batch/v1")), []);
  assert.deepEqual(jobOwner(job("batch.kubeno.dev/v1", "Other")), []);
});

Deno.test("moving the storage version is one line, then migrate-storage moves the objects", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const kubeconfig = `--kubeconfig=${cp.kubeconfigPath}`;
  const dir = await Deno.makeTempDir({ prefix: "kubeno-storage-" });
  // The copy sits beside the original so that its relative imports resolve unchanged.
  const flipped = new URL(`../examples/_storage_flip_${Deno.pid}.ts`, import.meta.url).pathname;
  const running: { child: Deno.ChildProcess; done: Promise<void> }[] = [];

  const op = async (program: string, extra: Record<string, string>, ...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", program, ...args, kubeconfig],
      env: { ...env, ...extra },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const start = (program: string, extra: Record<string, string> = {}) => {
    const child = new Deno.Command(Deno.execPath(), {
      args: runArgv(program, [
        kubeconfig,
        "--namespace=default",
        ...NO_SERVERS,
      ]),
      env: { ...env, ...extra },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const done = child.stderr.pipeTo(new WritableStream()).catch(() => {});
    const s = { child, done };
    running.push(s);
    return s;
  };
  const stop = async (s: ReturnType<typeof start>) => {
    s.child.kill("SIGINT");
    await s.child.status;
    await s.done;
    running.splice(running.indexOf(s), 1);
  };
  const apply = async (name: string, object: unknown) => {
    const path = `${dir}/${name}.json`;
    await Deno.writeTextFile(path, JSON.stringify(object));
    const r = await cp.kubectl("apply", "-f", path);
    if (r.code !== 0) throw new Error(r.stderr.trim());
    return r;
  };
  const myapp = (version: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: `apps.kubeno.dev/${version}`,
    kind: "Myapp",
    metadata: { name, namespace: "default" },
    spec,
  });
  const storage = async () => {
    const crd = await client.get(CustomResourceDefinition, CRD);
    return {
      storage: crd.spec.versions.find((v) => v.storage)?.name,
      storedVersions: crd.status?.storedVersions ?? [],
    };
  };

  try {
    await t.step("the change is one line", async () => {
      const text = await Deno.readTextFile(V1);
      assert.match(text, /^ {2}storage: "v1",$/m);
      const changed = text.replace(/^ {2}storage: "v1",$/m, '  storage: "v1alpha1",');
      await Deno.writeTextFile(flipped, changed);
      const a = text.split("\n"), b = changed.split("\n");
      assert.equal(a.length, b.length);
      assert.equal(a.filter((l, i) => l !== b[i]).length, 1);
    });

    await t.step("release with v1 stored holds objects", async () => {
      const r = await op(V1, {}, "install");
      assert.equal(r.code, 0, r.stderr);
      const v1 = start(V1);
      await waitFor(
        () => apply("a", myapp("v1alpha1", "a", { image: "nginx", port: 80 })).then(() => true),
        { timeoutMs: 60_000, intervalMs: 250, what: "the operator to admit a Myapp" },
      );
      await apply("b", myapp("v1", "b", { image: "nginx", nodeSelector: { disk: "ssd" } }));
      assert.deepEqual(await storage(), { storage: "v1", storedVersions: ["v1"] });
      await stop(v1);
    });

    await t.step("storage moved: the controller and webhooks still work at the hub", async () => {
      const r = await op(flipped, {}, "install");
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await storage(), {
        storage: "v1alpha1",
        storedVersions: ["v1", "v1alpha1"],
      });
      start(flipped);
      await waitFor(
        () => apply("c", myapp("v1", "c", { image: "nginx", replicas: 2 })).then(() => true),
        { timeoutMs: 60_000, intervalMs: 250, what: "the moved operator to admit a Myapp" },
      );
      // The defaulting webhook (at v1) set the ports; the controller (at v1) made the Deployment.
      const got = await cp.kubectl("get", "myapps.v1.apps.kubeno.dev", "c", "-o", "json");
      assert.equal(got.code, 0, got.stderr);
      assert.deepEqual(JSON.parse(got.stdout).spec.ports, [{ name: "http", containerPort: 8080 }]);
      const dep = await waitFor(
        () => client.get(Deployment, "c", { namespace: "default" }).catch(() => undefined),
        { timeoutMs: 30_000, what: "the Deployment of c" },
      );
      assert.equal(dep.spec?.replicas, 2);
      const b = await cp.kubectl("get", "myapps.v1.apps.kubeno.dev", "b", "-o", "json");
      assert.deepEqual(JSON.parse(b.stdout).spec.nodeSelector, { disk: "ssd" });
    });

    await t.step("migrate-storage rewrites every object at v1alpha1", async () => {
      const r = await op(flipped, {}, "migrate-storage");
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        /myapps\.apps\.kubeno\.dev 3 objects rewritten at v1alpha1; status\.storedVersions \[v1, v1alpha1\] -> \[v1alpha1\]/,
      );
      assert.deepEqual(await storage(), { storage: "v1alpha1", storedVersions: ["v1alpha1"] });
      // With the conversion webhook down, v1alpha1 reads need no conversion only if every
      // object is stored at v1alpha1; v1 reads need the webhook.
      await stop(running[0]);
      const at0 = await cp.kubectl("get", "myapps.v1alpha1.apps.kubeno.dev", "-o", "name");
      assert.equal(at0.code, 0, at0.stderr);
      assert.equal(at0.stdout.trim().split("\n").length, 3);
      const at1 = await cp.kubectl("get", "myapps.v1.apps.kubeno.dev", "-o", "name");
      assert.notEqual(at1.code, 0, "v1 read without the conversion webhook");
      assert.match(at1.stderr, /conversion webhook/);
    });

    await t.step("migrate-storage names an object that does not convert", async () => {
      // Tick: v1 stored, an object v2 cannot hold written while no operator runs, then v2 stored.
      const crd = Tick.crd();
      await client.create(CustomResourceDefinition, crd);
      await waitFor(async () => (await cp.kubectl("get", "ticks", "-A")).code === 0, {
        what: "ticks to be served",
      });
      await apply("legacy", {
        apiVersion: "guard.kubeno.dev/v1",
        kind: "Tick",
        metadata: { name: "legacy", namespace: "default" },
        spec: { schedule: "@weekly" },
      });
      const r = await op(TICK, { TICK_STORAGE: "v2" }, "install");
      assert.equal(r.code, 0, r.stderr);
      start(TICK, { TICK_STORAGE: "v2" });
      const m = await waitFor(async () => {
        const m = await op(TICK, { TICK_STORAGE: "v2" }, "migrate-storage");
        return /does not convert/.test(m.stderr) && m;
      }, { timeoutMs: 60_000, intervalMs: 500, what: "migrate-storage to reach the conversion" });
      assert.equal(m.code, 1);
      assert.equal(
        m.stderr.trim(),
        'tick-operator: Cannot migrate ticks.guard.kubeno.dev to v2: Tick "default/legacy" does not convert ' +
          '(the conversion says: Cannot convert Tick "default/legacy" from guard.kubeno.dev/v1 to ' +
          'guard.kubeno.dev/v2: schedule "@weekly" has 1 fields; v2 holds exactly 5); fix or ' +
          'delete it, then run "migrate-storage" again',
      );
    });
  } finally {
    for (const s of [...running]) await stop(s).catch(() => {});
    await Deno.remove(flipped).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
