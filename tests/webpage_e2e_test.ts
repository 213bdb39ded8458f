// Java Operator SDK's WebPage sample (examples/webpage.ts) end to end, as its readers run it:
// `install`, then the operator as a process under the ServiceAccount and RBAC that `manifests`
// generates, on a control plane with workloads (kwok nodes: pods become ready). The flows:
// create (ConfigMap, Deployment, Service; areWeGood once the rollout is done), expose and
// unexpose (the Ingress pruned), an html change (the pod template's hash rolls the pods), an
// error (errorMessage set, retried with backoff, cleared once fixed), kill -9 mid-way (a
// restarted operator finishes with no duplicate and no Conflict), and deletion (the children
// are garbage-collected).
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace, Service } from "../src/core/kinds.ts";
import { Deployment, ReplicaSet } from "../src/core/kinds_workloads.ts";
import { Ingress } from "../src/core/api/networking/v1.ts";
import { isNotFound } from "../src/client/errors/api_error.ts";
import { fromYaml, toYaml } from "../src/util/yaml.ts";
import type { KubeObject } from "../src/core/object.ts";
import { WebPage, type WebPageObject } from "../examples/webpage.ts";
import { serviceAccountKubeconfig, startExample, uniqueName, waitFor } from "./_helpers.ts";
import { freePort } from "../src/testing/process.ts";

const REPO = new URL("../", import.meta.url).pathname;

/** `deno run -A examples/webpage.ts <args>`, as documented; its output. */
async function webpage(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const res = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", "examples/webpage.ts", ...args],
    cwd: REPO,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: res.code, out: dec.decode(res.stdout), err: dec.decode(res.stderr) };
}

Deno.test("examples/webpage.ts: the JOSDK WebPage sample's flows under the generated RBAC", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const installed = await webpage("install", `--kubeconfig=${cp.kubeconfigPath}`);
  assert.equal(installed.code, 0, installed.err);

  // The generated ServiceAccount and RBAC (not its Deployment: the operator runs here).
  const manifests = await webpage("manifests");
  assert.equal(manifests.code, 0, manifests.err);
  const docs = (fromYaml(manifests.out) as KubeObject[]).filter((o) =>
    o && o.kind !== "Deployment"
  );
  const file = `${cp.dir}/webpage-rbac.yaml`;
  await Deno.writeTextFile(file, toYaml(docs));
  const applied = await cp.kubectl("apply", "-f", file);
  assert.equal(applied.code, 0, applied.stderr);
  const sa = docs.find((o) => o.kind === "ServiceAccount")!;
  const saConfig = `${cp.dir}/webpage-sa.kubeconfig`;
  await Deno.writeTextFile(
    saConfig,
    await serviceAccountKubeconfig(cp, sa.metadata.namespace!, sa.metadata.name!),
  );
  const ns = uniqueName("web");
  await client.create(Namespace, { metadata: { name: ns } });
  const start = () =>
    startExample(
      "examples/webpage.ts",
      [
        `--kubeconfig=${saConfig}`,
        `--namespace=${sa.metadata.namespace}`,
        `--metrics-bind-address=127.0.0.1:${freePort()}`,
        "--metrics-secure=false",
        `--health-probe-bind-address=127.0.0.1:${freePort()}`,
        "--log-format=json",
      ],
      { NO_COLOR: "1" },
      { cwd: REPO },
    );
  let op = start();
  const page = (name: string) => client.get(WebPage, name, { namespace: ns });
  let lastSeen = "";
  const good = async (name: string) => {
    const p = await page(name);
    lastSeen = `${name}: generation ${p.metadata.generation}, status ${JSON.stringify(p.status)}`;
    return p.status?.areWeGood === true && p.status.observedGeneration === p.metadata.generation;
  };
  const untilGood = (name: string, what: string) =>
    waitFor(() => good(name), { what, timeoutMs: 60_000 }).catch((err) => {
      throw new Error(`${err.message}; last seen ${lastSeen}`);
    });
  const exists = async (res: typeof Ingress | typeof Service, name: string) => {
    try {
      await client.get(res as typeof Service, name, { namespace: ns });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  };
  const create = (name: string, html: string) =>
    client.create(WebPage, {
      apiVersion: WebPage.apiVersion,
      kind: WebPage.kind,
      metadata: { name, namespace: ns },
      spec: { html, exposed: false },
    } as WebPageObject);
  try {
    await t.step("create: ConfigMap, Deployment and Service; good once rolled out", async () => {
      await create("hello", "<h1>Hello</h1>");
      await untilGood("hello", "hello to be good");
      const cm = await client.get(ConfigMap, "hello", { namespace: ns });
      assert.equal(cm.data?.["index.html"], "<h1>Hello</h1>");
      assert.ok(await exists(Service, "hello"));
      assert.equal(await exists(Ingress, "hello"), false, "not exposed");
      assert.equal((await page("hello")).status?.htmlConfigMap, "hello");
    });

    await t.step("expose, then unexpose: the Ingress appears, then is pruned", async () => {
      await client.patch(WebPage, "hello", { spec: { exposed: true } }, { namespace: ns });
      await waitFor(() => exists(Ingress, "hello"), { what: "the Ingress" });
      await client.patch(WebPage, "hello", { spec: { exposed: false } }, { namespace: ns });
      await waitFor(async () => !(await exists(Ingress, "hello")), { what: "the Ingress pruned" });
      assert.ok(await exists(Service, "hello"), "the rest stays");
    });

    await t.step("an html change rolls the pods", async () => {
      const before = await client.get(Deployment, "hello", { namespace: ns });
      const hashOf = (d: Deployment) =>
        d.spec?.template.metadata?.annotations?.["sample.kubeno.dev/html-sha256"];
      await client.patch(WebPage, "hello", { spec: { html: "<h1>Hello again</h1>" } }, {
        namespace: ns,
      });
      await waitFor(async () => {
        const d = await client.get(Deployment, "hello", { namespace: ns });
        return hashOf(d) !== hashOf(before);
      }, { what: "the pod template's hash to change" });
      await waitFor(() => good("hello"), {
        what: "hello good after the rollout",
        timeoutMs: 60_000,
      });
      const sets = (await client.list(ReplicaSet, { namespace: ns, labelSelector: "app=hello" }))
        .items;
      assert.equal(sets.length, 2, "one ReplicaSet per html");
      assert.equal(
        (await client.get(ConfigMap, "hello", { namespace: ns })).data?.["index.html"],
        "<h1>Hello again</h1>",
      );
    });

    await t.step(
      "an error: errorMessage set and retried with backoff, cleared once fixed",
      async () => {
        await client.patch(WebPage, "hello", { spec: { html: "<h1>error</h1>" } }, {
          namespace: ns,
        });
        await waitFor(async () => {
          const p = await page("hello");
          return p.status?.areWeGood === false &&
            p.status.errorMessage === "Error: Simulated error: the html says so";
        }, { what: "the error status" });
        await waitFor(() => op.lines(/Simulated error/).length >= 2, {
          what: "a retry after the backoff",
        });
        await client.patch(WebPage, "hello", { spec: { html: "<h1>fixed</h1>" } }, {
          namespace: ns,
        });
        await waitFor(async () => {
          const p = await page("hello");
          return p.status?.errorMessage === undefined && await good("hello");
        }, { what: "the error cleared and hello good", timeoutMs: 60_000 });
      },
    );

    await t.step(
      "kill -9 mid-way: a restarted operator finishes, no duplicate, no Conflict",
      async () => {
        await create("second", "<h1>Second</h1>");
        // Killed as soon as its first child exists: the rest of the reconcile is cut off.
        await waitFor(async () => await exists(ConfigMap as unknown as typeof Service, "second"), {
          what: "second's ConfigMap",
          intervalMs: 5,
        });
        await op.stop("SIGKILL");
        op = start();
        await untilGood("second", "second to be good");
        const sets = (await client.list(ReplicaSet, { namespace: ns, labelSelector: "app=second" }))
          .items;
        assert.equal(sets.length, 1, "one ReplicaSet");
        assert.deepEqual(op.lines(/Conflict|409/), [], "no Conflict");
      },
    );

    await t.step("delete: the children are garbage-collected", async () => {
      await client.delete(WebPage, "hello", { namespace: ns });
      await waitFor(async () => {
        for (const res of [ConfigMap, Service, Deployment] as const) {
          try {
            await client.get(res as typeof Service, "hello", { namespace: ns });
            return false;
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
        }
        return true;
      }, { what: "hello's children to be deleted", timeoutMs: 60_000 });
    });

    assert.deepEqual(op.lines(/forbidden|Forbidden/), [], "the generated RBAC suffices");
    const status = await op.stop("SIGTERM");
    assert.equal(status.code, 0, op.logs().slice(-3000));
  } finally {
    await op.stop("SIGKILL");
  }
});
