// The test control plane itself, exercised through @kubernetes/client-node's KubeConfig
// loaded from the generated kubeconfig (client-certificate authentication).
import * as k8s from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { waitFor } from "./_helpers.ts";

function clientsFor(kubeconfigPath: string) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return { kc, core: kc.makeApiClient(k8s.CoreV1Api) };
}

Deno.test("control plane: ConfigMap CRUD, watch and RBAC through client-node", async (t) => {
  await using cp = await startControlPlane();
  const { kc, core } = clientsFor(cp.kubeconfigPath);

  await t.step("reports a real version", async () => {
    const v = await cp.request("GET", "/version");
    assert.equal(v.body.gitVersion, cp.version);
  });

  await t.step("create, get, list, watch and delete a ConfigMap", async () => {
    const events: string[] = [];
    const watch = new k8s.Watch(kc);
    const req = await watch.watch(
      "/api/v1/namespaces/default/configmaps",
      { labelSelector: "test=cp" },
      (type: string, obj: { metadata: { name: string } }) =>
        events.push(`${type} ${obj.metadata.name}`),
      () => {},
    );
    try {
      await core.createNamespacedConfigMap({
        namespace: "default",
        body: { metadata: { name: "one", labels: { test: "cp" } }, data: { a: "1" } },
      });
      const got = await core.readNamespacedConfigMap({ name: "one", namespace: "default" });
      assert.equal(got.data?.a, "1");
      const list = await core.listNamespacedConfigMap({
        namespace: "default",
        labelSelector: "test=cp",
      });
      assert.deepEqual(list.items.map((c) => c.metadata?.name), ["one"]);
      await core.deleteNamespacedConfigMap({ name: "one", namespace: "default" });
      await waitFor(() => events.includes("ADDED one") && events.includes("DELETED one"), {
        what: "ADDED and DELETED watch events",
      });
      await assert.rejects(
        core.readNamespacedConfigMap({ name: "one", namespace: "default" }),
        (e: { code?: number }) => e.code === 404,
      );
    } finally {
      req.abort();
    }
  });

  await t.step("a user without RBAC bindings gets 403 Forbidden", async () => {
    const { core: bob } = clientsFor(await cp.createUser("bob"));
    await assert.rejects(
      bob.listNamespacedConfigMap({ namespace: "default" }),
      (e: { code?: number; body?: string }) => e.code === 403 && /forbidden/.test(String(e.body)),
    );
  });

  await t.step("kubectl works against it", async () => {
    const out = await cp.kubectl("get", "namespace", "default", "-o", "name");
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.trim(), "namespace/default");
  });

  await t.step("stop removes the processes and the temp folder", async () => {
    const pids = await pidsMentioning(cp.dir);
    assert.ok(pids.length >= 2, `expected etcd and kube-apiserver running, found ${pids.length}`);
    await cp.stop();
    await waitFor(async () => (await pidsMentioning(cp.dir)).length === 0, {
      what: "processes to exit",
    });
    await waitFor(() => gone(cp.dir), { what: "temp folder removal" });
  });
});

Deno.test("control plane: SIGINT to the test process leaves nothing behind", async () => {
  const script = `
    import { startControlPlane } from ${
    JSON.stringify(new URL("../testing.ts", import.meta.url).href)
  };
    const cp = await startControlPlane();
    console.log(cp.dir);
    await new Promise(() => {});
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let dir = "";
  while (!dir.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    dir += value;
  }
  dir = dir.trim();
  assert.match(dir, /kubeno-cp-/);
  assert.ok((await pidsMentioning(dir)).length >= 2, "etcd and kube-apiserver should be running");
  child.kill("SIGINT");
  await child.status;
  reader.releaseLock();
  await child.stdout.cancel().catch(() => {});
  await waitFor(async () => (await pidsMentioning(dir)).length === 0, {
    what: "etcd and kube-apiserver to exit",
  });
  await waitFor(() => gone(dir), { what: "temp folder removal" });
});

Deno.test("control plane: without binaries or Go, one line names both remedies", async () => {
  const empty = await Deno.makeTempDir();
  try {
    const script = `
      import { startControlPlane } from ${
      JSON.stringify(new URL("../testing.ts", import.meta.url).href)
    };
      try { await startControlPlane(); } catch (e) { console.log(e.message); Deno.exit(3); }
    `;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", script],
      // A PATH without Go (Go lives in /usr/local/go/bin on our machines).
      env: { KUBENO_ASSETS_DIR: empty, KUBEBUILDER_ASSETS: empty, PATH: "/usr/bin:/bin" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const msg = new TextDecoder().decode(out.stdout).trim();
    assert.equal(out.code, 3);
    assert.equal(msg.split("\n").length, 1, msg);
    assert.match(msg, /KUBEBUILDER_ASSETS/);
    assert.match(msg, /install Go/);
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

/** PIDs of processes whose command line mentions `text` (the control plane's temp dir). */
async function pidsMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = await Deno.readTextFile(`/proc/${e.name}/cmdline`);
      const argv0 = cmd.split("\0")[0];
      if (cmd.includes(text) && !argv0.endsWith("sh") && !cmd.includes("kubeno-reaper")) {
        pids.push(Number(e.name));
      }
    } catch { /* exited */ }
  }
  return pids;
}

async function gone(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return false;
  } catch {
    return true;
  }
}
