// The operator CLI as users run it: spawns the real program (tests/fixtures/widget_operator.ts)
// against a real control plane. Covers usage errors, an unreachable cluster, install (twice),
// printer columns, uninstall's refusal and --yes, the manifests applied to the cluster, and the
// operator running as its generated ServiceAccount with only the generated RBAC.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import {
  decodeOutput,
  httpsGet,
  serviceAccountToken,
  waitFor,
  widgetOperatorCommand,
} from "./_helpers.ts";

const CRD = "widgets.widgets.kubeno.dev";
const NS = "widget-system";
const SA = "widget-operator";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const command = (args: string[]) => widgetOperatorCommand(args);

async function op(...args: string[]): Promise<Run> {
  const out = await command(args).output();
  return decodeOutput(out);
}

/** No Node warnings and no stack frames on stderr. */
function assertCleanStderr(stderr: string): void {
  assert(!/punycode|DeprecationWarning/.test(stderr), `warning on stderr:\n${stderr}`);
  assert(!/^\s+at .+:\d+:\d+\)?$/m.test(stderr), `stack trace on stderr:\n${stderr}`);
}

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${stderr}`);
  return lines[0];
}

Deno.test("usage errors exit 2 with one line and the usage hint", async () => {
  const unknownCmd = await op("frobnicate");
  assert.equal(unknownCmd.code, 2);
  assert.equal(
    oneLine(unknownCmd.stderr),
    'widget-operator: Unknown command "frobnicate"; run "widget-operator --help" for usage',
  );
  const unknownFlag = await op("install", "--bogus");
  assert.equal(unknownFlag.code, 2);
  assert.match(
    oneLine(unknownFlag.stderr),
    /Unknown flag "--bogus"; run "widget-operator install --help"/,
  );
  const badValue = await op("--log-level", "loud", "manifests");
  assert.equal(badValue.code, 2);
  assert.match(oneLine(badValue.stderr), /"--log-level" takes one of debug, info, warning, error/);

  const help = await op("--help");
  assert.equal(help.code, 0);
  for (const cmd of ["run", "install", "uninstall", "manifests", "version", "help"]) {
    assert.match(help.stdout, new RegExp(`^  ${cmd} `, "m"));
  }
  const version = await op("version");
  assert.deepEqual([version.code, version.stdout], [0, "widget-operator 1.0.0\n"]);
  assertCleanStderr(help.stderr + version.stderr + unknownFlag.stderr);
});

Deno.test("an unreachable cluster is waited out until the deadline, then exits 1 with one line naming the server", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  try {
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify(kubeconfigFor(`https://127.0.0.1:${port}`, { token: "x" })),
    );
    const waits = {
      install: ["--timeout=1s"],
      run: ["--startup-timeout=1s", "--metrics-bind-address=0", "--health-probe-bind-address=0"],
    };
    for (const [cmd, flags] of Object.entries(waits)) {
      const res = await op(cmd, "--kubeconfig", kubeconfig, ...flags);
      assert.equal(res.code, 1, res.stderr);
      // The wait is logged (JSON lines); the error itself is one plain line.
      const line = oneLine(res.stderr.split("\n").filter((l) => !l.startsWith("{")).join("\n"));
      assert(
        res.stderr.includes("Waiting for the Kubernetes API server (unreachable)"),
        res.stderr,
      );
      assert(line.startsWith("widget-operator: Gave up after waiting "), line);
      assert(line.includes(`"https://127.0.0.1:${port}"`), line);
      assert(line.includes("check that the cluster is running"), line);
      assertCleanStderr(res.stderr);
    }
  } finally {
    await Deno.remove(kubeconfig);
  }
});

Deno.test("install, uninstall, manifests and run against a real control plane", async (t) => {
  await using cp = await startControlPlane();
  const kc = ["--kubeconfig", cp.kubeconfigPath];

  await t.step("install applies the CRD and waits until it is Established", async () => {
    const res = await op("install", ...kc);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout, `customresourcedefinition.apiextensions.k8s.io/${CRD} applied\n`);
    assertCleanStderr(res.stderr);
    const crd = await cp.request(
      "GET",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`,
    );
    assert(
      crd.body.status.conditions.some((c: { type: string; status: string }) =>
        c.type === "Established" && c.status === "True"
      ),
    );
  });

  await t.step("install twice is a no-op the second time", async () => {
    const before = await cp.request(
      "GET",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`,
    );
    const res = await op("install", ...kc);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout, `customresourcedefinition.apiextensions.k8s.io/${CRD} unchanged\n`);
    const after = await cp.request(
      "GET",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`,
    );
    assert.equal(after.body.metadata.resourceVersion, before.body.metadata.resourceVersion);
  });

  await t.step("printer columns show in kubectl get", async () => {
    await applyYaml(cp, widgetYaml("w1", 3));
    const get = await cp.kubectl("get", "widgets", "-n", "default");
    assert.equal(get.code, 0, get.stderr);
    const [header, row] = get.stdout.trim().split("\n");
    assert.match(header, /^NAME\s+SIZE\s+PHASE$/);
    assert.match(row, /^w1\s+3\b/);
  });

  await t.step("uninstall refuses without --yes while objects exist", async () => {
    const res = await op("uninstall", ...kc);
    assert.equal(res.code, 2);
    const line = oneLine(res.stderr);
    assert.match(
      line,
      /Refusing to uninstall: deleting a CRD deletes all its objects and 1 widgets\.widgets\.kubeno\.dev exist; pass --yes/,
    );
    assert.equal(
      (await cp.request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`))
        .status,
      200,
    );
  });

  const dir = await Deno.makeTempDir();
  await t.step("manifests apply cleanly; --out writes one file per group", async () => {
    const res = await op("manifests", "--image", "widget-operator:test", "--namespace", NS);
    assert.equal(res.code, 0, res.stderr);
    const file = `${dir}/all.yaml`;
    await Deno.writeTextFile(file, res.stdout);
    const applied = await cp.kubectl("apply", "--server-side", "--force-conflicts", "-f", file);
    assert.equal(applied.code, 0, applied.stderr);
    for (
      const obj of [
        `customresourcedefinition.apiextensions.k8s.io/${CRD}`,
        `namespace/${NS}`,
        `serviceaccount/${SA}`,
        "clusterrole.rbac.authorization.k8s.io/widget-operator",
        "clusterrolebinding.rbac.authorization.k8s.io/widget-operator",
        "role.rbac.authorization.k8s.io/widget-operator-leader-election",
        "rolebinding.rbac.authorization.k8s.io/widget-operator-leader-election",
        "deployment.apps/widget-operator",
      ]
    ) assert(applied.stdout.includes(obj), `${obj} not in:\n${applied.stdout}`);

    const out = await op("manifests", "--out", `${dir}/out`, "--namespace", NS);
    assert.equal(out.code, 0, out.stderr);
    const files = [...Deno.readDirSync(`${dir}/out`)].map((e) => e.name).sort();
    assert.deepEqual(files, ["crds.yaml", "operator.yaml", "rbac.yaml"]);
  });

  let operatorProc: Deno.ChildProcess | undefined;
  let operatorErr: Promise<string> | undefined;
  await t.step("the operator runs as its ServiceAccount with only the generated RBAC", async () => {
    const tr = await cp.request("POST", `/api/v1/namespaces/${NS}/serviceaccounts/${SA}/token`, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    });
    assert.equal(tr.status, 201, JSON.stringify(tr.body));
    const saKubeconfig = `${dir}/sa.kubeconfig`;
    await Deno.writeTextFile(
      saKubeconfig,
      JSON.stringify(kubeconfigFor(cp.server, { token: tr.body.status.token }, cp.caCertPem)),
    );
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const metricsPort = probe.addr.port;
    probe.close();
    operatorProc = command([
      "run",
      "--kubeconfig",
      saKubeconfig,
      "--namespace",
      NS,
      "--leader-elect",
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--health-probe-bind-address=0",
    ]).spawn();
    operatorErr = new Response(operatorProc.stderr).text();
    void new Response(operatorProc.stdout).text();

    const cm = await waitFor(async () => {
      const r = await cp.request("GET", "/api/v1/namespaces/default/configmaps/w1-config");
      return r.status === 200 && r.body;
    }, { what: "the owned ConfigMap w1-config", timeoutMs: 30_000 });
    assert.deepEqual(cm.data, { size: "3", color: "blue" });
    assert.equal(cm.metadata.ownerReferences[0].kind, "Widget");
    await waitFor(async () => {
      const w = await cp.request(
        "GET",
        "/apis/widgets.kubeno.dev/v1/namespaces/default/widgets/w1",
      );
      return w.body.status?.phase === "Ready" &&
        w.body.metadata.finalizers?.includes("widgets.kubeno.dev/cleanup");
    }, { what: "w1 Ready with its finalizer" });
    // Secure metrics, as deployed: the operator checks a scraper's token with TokenReview and
    // SubjectAccessReview under its own generated RBAC (the metrics-auth ClusterRole).
    const auth = await serviceAccountToken(cp, "scraper", "widget-operator-metrics-reader");
    const metrics = await waitFor(async () => {
      const r = await httpsGet(`https://127.0.0.1:${metricsPort}/metrics`, auth);
      return r.status === 200 &&
        /controller_runtime_reconcile_total\{controller="widget",result="success"\} [1-9]/
          .test(r.body) &&
        r.body;
    }, { what: "reconcile metrics on /metrics over HTTPS with the scraper's token" });
    assert.match(metrics, /^rest_client_requests_total\{/m);
    const lease = await cp.request(
      "GET",
      `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/widget-operator`,
    );
    assert.equal(lease.status, 200, "the leader-election Lease exists");
  });

  await t.step("the ServiceAccount can do nothing else", async () => {
    const as = `--as=system:serviceaccount:${NS}:${SA}`;
    const can = async (...args: string[]) =>
      (await cp.kubectl("auth", "can-i", as, ...args)).stdout.trim();
    assert.equal(await can("create", "configmaps", "-n", "default"), "yes");
    assert.equal(
      await can("update", "widgets.widgets.kubeno.dev/finalizers", "-n", "default"),
      "yes",
    );
    assert.equal(await can("list", "secrets", "-n", "default"), "no");
    assert.equal(await can("delete", "customresourcedefinitions"), "no");
    assert.equal(await can("create", "widgets.widgets.kubeno.dev", "-n", "default"), "no");
    assert.equal(await can("delete", "deployments", "-n", "default"), "no");
    assert.equal(await can("update", "leases", "-n", "default"), "no");
    assert.equal(await can("update", "leases", "-n", NS), "yes");
    assert.equal(await can("create", "tokenreviews.authentication.k8s.io"), "yes");
    assert.equal(await can("create", "subjectaccessreviews.authorization.k8s.io"), "yes");
  });

  await t.step(
    "uninstall --yes deletes the CRD and its objects (finalized by the operator)",
    async () => {
      await applyYaml(cp, widgetYaml("w2", 1));
      const res = await op("uninstall", "--yes", ...kc);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stdout, `customresourcedefinition.apiextensions.k8s.io/${CRD} deleted\n`);
      assert.match(
        res.stderr,
        /^Warning: deleting customresourcedefinition\.apiextensions\.k8s\.io\/widgets\.widgets\.kubeno\.dev deletes its 2 objects$/m,
      );
      assertCleanStderr(res.stderr);
      assert.equal(
        (await cp.request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`))
          .status,
        404,
      );
    },
  );

  await t.step("SIGTERM stops the operator gracefully with exit code 0", async () => {
    operatorProc!.kill("SIGTERM");
    const status = await operatorProc!.status;
    const stderr = await operatorErr!;
    assert.equal(status.code, 0, stderr);
    assertCleanStderr(stderr);
  });
  await Deno.remove(dir, { recursive: true });
});

function widgetYaml(name: string, size: number): string {
  return `apiVersion: widgets.kubeno.dev/v1
kind: Widget
metadata: { name: ${name}, namespace: default }
spec: { size: ${size} }
`;
}

async function applyYaml(
  cp: { kubectl(...a: string[]): Promise<Run> },
  yaml: string,
): Promise<void> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, yaml);
    const res = await cp.kubectl("apply", "-f", file);
    assert.equal(res.code, 0, res.stderr);
  } finally {
    await Deno.remove(file);
  }
}

function kubeconfigFor(server: string, user: Record<string, string>, ca?: string): unknown {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "c",
      cluster: { server, ...(ca ? { "certificate-authority-data": btoa(ca) } : {}) },
    }],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u", namespace: "default" } }],
    "current-context": "ctx",
  };
}
