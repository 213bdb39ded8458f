// Optional kinds against a real control plane: the operator of
// tests/fixtures/optional_kinds_operator.ts owns cert-manager Certificates, whose CRD is not
// installed when it starts. It starts, is ready (listing the kind it runs without) and
// reconciles its ConfigMaps; the CRD is then installed and Certificates are applied, cached
// and trigger their owner without a restart; the CRD is deleted and the operator keeps
// running with the Certificate watch closed (the API server's own gauge). Marked `required`,
// the same kind ends start-up with one line. The RBAC from `manifests` names the kind.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import { fromYaml } from "../src/util/yaml.ts";
import { Certificate } from "./fixtures/optional_kinds_operator.ts";
import { startExample, uniqueName, waitFor } from "./_helpers.ts";

const FIXTURE = new URL("./fixtures/optional_kinds_operator.ts", import.meta.url).pathname;
const CRD_FILE = new URL(
  "./fixtures/crds/cert-manager/cert-manager.io_certificates.yaml",
  import.meta.url,
).pathname;

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  return port;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(url);
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: "" };
  }
}

Deno.test("an operator runs without an optional kind and picks it up at run time", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const ns = uniqueName("opt");
  await client.create(Namespace, { metadata: { name: ns } });
  const label = { "optional.kubeno.dev/cert": "yes" };
  await client.create(ConfigMap, { metadata: { name: "c1", namespace: ns, labels: label } });
  const env = { NO_COLOR: "1", KUBECONFIG: cp.kubeconfigPath };

  /** Watches of Certificates open in kube-apiserver, by its own gauge. */
  const certificateWatches = async (): Promise<number> => {
    const { body } = await cp.request("GET", "/metrics");
    return String(body).split("\n")
      .filter((l) =>
        l.startsWith("apiserver_longrunning_requests{") &&
        l.includes('resource="certificates"') && l.includes('verb="WATCH"')
      )
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  };

  await t.step("marked required, the missing kind ends start-up with one line", async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", FIXTURE, "run", "--metrics-bind-address=0"],
      env: { ...env, CERT_REQUIRED: "1" },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const stderr = new TextDecoder().decode(out.stderr).trimEnd().split("\n");
    const last = stderr.at(-1)!;
    console.log(`exit ${out.code}: ${last}`);
    assert.equal(out.code, 1, stderr.join("\n"));
    assert.match(last, /does not serve Certificate \(cert-manager\.io\/v1\)/);
    assert.ok(!stderr.some((l) => /^\s+at /.test(l)), "no stack trace");
  });

  await t.step("the RBAC from manifests names the optional kind and CRDs", async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", FIXTURE, "manifests"],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(out.code, 0);
    const docs = fromYaml(new TextDecoder().decode(out.stdout)) as {
      kind: string;
      rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    }[];
    const rules = docs.filter((d) => d.kind === "ClusterRole").flatMap((d) => d.rules ?? []);
    const grants = (group: string, res: string, verb: string) =>
      rules.some((r) =>
        r.apiGroups.includes(group) && r.resources.includes(res) && r.verbs.includes(verb)
      );
    for (const verb of ["get", "list", "watch", "create", "patch", "delete"]) {
      assert.ok(grants("cert-manager.io", "certificates", verb), `certificates ${verb}`);
    }
    for (const verb of ["get", "list", "watch"]) {
      assert.ok(
        grants("apiextensions.k8s.io", "customresourcedefinitions", verb),
        `customresourcedefinitions ${verb}`,
      );
    }
  });

  const probePort = freePort();
  const metricsPort = freePort();
  const op = startExample(FIXTURE, [
    "--health-probe-bind-address",
    `127.0.0.1:${probePort}`,
    "--metrics-bind-address",
    `127.0.0.1:${metricsPort}`,
    "--metrics-secure=false",
  ], env);
  const reconciled = (what: string) =>
    op.lines(new RegExp(`Reconciled ${ns}/c1: certificate ${what}`)).length;
  const served = async () => {
    const { body } = await get(`http://127.0.0.1:${metricsPort}/metrics`);
    const line = body.split("\n").find((l) =>
      l.startsWith("kubeno_controller_kind_served{") && l.includes('kind="Certificate"')
    );
    return line?.slice(line.lastIndexOf(" ") + 1);
  };
  /** The operator's GETs answered 404, from its own client metrics. */
  const operatorNotFound = async () => {
    const { body } = await get(`http://127.0.0.1:${metricsPort}/metrics`);
    return body.split("\n").filter((l) =>
      l.startsWith('rest_client_requests_total{code="404",method="GET"')
    ).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  };
  try {
    await t.step("starts without the CRD, is ready and reconciles its primaries", async () => {
      await waitFor(() => reconciled("not served") > 0, {
        what: `a reconcile of c1 without Certificates:\n${op.logs()}`,
      });
      // Reconciles start once the controller's own caches synced; /readyz waits for every
      // informer, the CustomResourceDefinitions one that follows Certificate's CRD too, which
      // may sync a moment later.
      const ready = await waitFor(async () => {
        const r = await get(`http://127.0.0.1:${probePort}/readyz?verbose`);
        if (r.status !== 200) throw new Error(`${r.status} ${r.body.trim()}`);
        return r;
      }, { what: "/readyz to pass" });
      console.log(ready.body.trim());
      assert.match(
        ready.body,
        /\[\+\]optional-kinds ok: running without Certificate \(cert-manager\.io\/v1\) in controller "certs"/,
      );
      assert.equal(await served(), "0");
      assert.equal(await certificateWatches(), 0);
    });

    let crd: CustomResourceDefinition;
    await t.step("the CRD installed, Certificates are applied, cached and trigger", async () => {
      crd = fromYaml(await Deno.readTextFile(CRD_FILE))[0] as CustomResourceDefinition;
      const before = reconciled("applied");
      const installedAt = Date.now();
      await client.create(CustomResourceDefinition, crd);
      await waitFor(
        () => op.lines(new RegExp(`Reconciled ${ns}/c1: certificate applied, 1 cached`)).length > 0,
        {
          what: `c1 to be reconciled with its Certificate cached:\n${op.logs()}`,
        },
      );
      console.log(
        `CRD created → c1 reconciled with its Certificate applied and cached: ${
          Date.now() - installedAt
        } ms`,
      );
      assert.ok(reconciled("applied") > before);
      const cert = await client.get(Certificate, "c1-cert", { namespace: ns });
      assert.equal(cert.metadata.ownerReferences?.[0]?.name, "c1");
      assert.equal(await served(), "1");
      const ready = await get(`http://127.0.0.1:${probePort}/readyz?verbose`);
      assert.equal(ready.status, 200);
      assert.match(ready.body, /\[\+\]optional-kinds ok\n/);
      await waitFor(async () => (await certificateWatches()) === 1, {
        what: "the API server to count one Certificate watch",
      });
      // Someone else's change to an owned Certificate reconciles its owner.
      const n = reconciled("applied");
      await client.patch(Certificate, "c1-cert", { metadata: { labels: { touched: "yes" } } }, {
        namespace: ns,
      });
      await waitFor(() => reconciled("applied") > n, {
        what: "the change to c1-cert to reconcile c1",
      });
    });

    await t.step("the CRD deleted, the operator runs on with the watch closed", async () => {
      await client.delete(CustomResourceDefinition, crd.metadata.name!);
      await waitFor(async () => (await certificateWatches()) === 0, {
        what: `the API server's Certificate watch count to drop to 0:\n${op.logs()}`,
      });
      await waitFor(async () => (await served()) === "0", { what: "the metric to say 0" });
      const ready = await get(`http://127.0.0.1:${probePort}/readyz?verbose`);
      assert.equal(ready.status, 200, ready.body);
      assert.match(ready.body, /running without Certificate/);
      // Still reconciling, without the kind.
      const n = reconciled("not served");
      await client.patch(ConfigMap, "c1", { data: { again: "yes" } }, { namespace: ns });
      await waitFor(() => reconciled("not served") > n, {
        what: `c1 reconciled again without Certificates:\n${op.logs()}`,
      });
      assert.equal(await certificateWatches(), 0);
      // The informer is gone, not retrying: the operator's client gets no 404 over the next
      // seconds (an informer left behind retries its list or watch of the unknown resource
      // within about a second: "retrying with backoff, first in 514 ms").
      assert.equal(op.lines(/runs without Certificate \(cert-manager.io\/v1\)/).length, 1);
      const notFound = await operatorNotFound();
      await new Promise((r) => setTimeout(r, 4_000));
      assert.equal(await operatorNotFound(), notFound, "the operator still asks for Certificates");
    });
  } finally {
    const status = await op.stop();
    assert.equal(status.code, 0, op.logs());
  }
});
