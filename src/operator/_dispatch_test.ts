import assert from "node:assert/strict";
import { z } from "zod";
import { defineOperator, dispatch } from "./_dispatch.ts";
import { describeError } from "./_errors.ts";
import { ConnectionError } from "../client/errors/api_error.ts";
import { runSettings } from "./run/run_settings.ts";
import { defineResource } from "../schema/define_resource.ts";
import { ConfigMap } from "../core/kinds.ts";
import { KubeconfigError } from "../client/kubeconfig/kubeconfig_error.ts";
import { reconcile } from "../runtime/controller/reconcile.ts";
import { fromYaml } from "../util/yaml.ts";

const Gadget = defineResource({
  group: "gadgets.example.com",
  version: "v1",
  kind: "Gadget",
  spec: z.object({ size: z.int() }),
});
const Extra = defineResource({
  group: "gadgets.example.com",
  version: "v1",
  kind: "Part",
  spec: z.object({}),
});
const controller = reconcile(Gadget, { owns: [ConfigMap], reconcile() {} });

async function run(
  args: string[],
  options = { name: "gadget-operator", controllers: [controller] },
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await dispatch(defineOperator(options), args, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  return { code, out: out.join("\n"), err };
}

Deno.test("dispatch: help, version and usage errors", async () => {
  for (const args of [["help"], ["--help"], ["-h"]]) {
    const r = await run(args);
    assert.equal(r.code, 0);
    assert.match(r.out, /^Usage: gadget-operator \[command\] \[flags\]$/m);
  }
  const cmdHelp = await run(["help", "uninstall"]);
  assert.match(cmdHelp.out, /^Usage: gadget-operator uninstall \[flags\]$/m);
  assert.match(cmdHelp.out, /--yes/);
  assert.match((await run(["manifests", "-h"])).out, /--out DIR/);
  assert.deepEqual(await run(["version"]), { code: 0, out: "gadget-operator 0.0.0", err: [] });
  assert.equal((await run(["--version"])).out, "gadget-operator 0.0.0");
  assert.deepEqual((await run(["help", "nope"])).err, [
    'gadget-operator: Unknown command "nope"; run "gadget-operator --help" for usage',
  ]);
  const extra = await run(["manifests", "stray"]);
  assert.equal(extra.code, 2);
  assert.deepEqual(extra.err, [
    'gadget-operator: Unexpected argument "stray"; run "gadget-operator manifests --help" for usage',
  ]);
  assert.equal((await run(["run", "--webhook-port", "x"])).code, 2);
});

Deno.test("dispatch: manifests from the definitions, with extra resources and flags", async () => {
  const r = await run(["--namespace", "ops", "manifests", "--image", "img:1"], {
    name: "gadget-operator",
    controllers: [controller],
    // @ts-ignore: resources is accepted by operator()
    resources: [Extra, Gadget],
  });
  assert.equal(r.code, 0, r.err.join("\n"));
  const docs = fromYaml(r.out) as {
    kind: string;
    metadata: { name: string; namespace?: string };
  }[];
  assert.deepEqual(
    docs.filter((d) => d.kind === "CustomResourceDefinition").map((d) => d.metadata.name),
    ["gadgets.gadgets.example.com", "parts.gadgets.example.com"],
  );
  const dep = docs.find((d) => d.kind === "Deployment") as unknown as {
    metadata: { namespace: string };
    spec: { template: { spec: { containers: { image: string }[] } } };
  };
  assert.equal(dep.metadata.namespace, "ops");
  assert.equal(dep.spec.template.spec.containers[0].image, "img:1");
});

Deno.test("defineOperator rejects bad names, duplicate controllers and conflicting CRDs", () => {
  assert.throws(() => defineOperator({ name: "Bad_Name", controllers: [] }), /must be a DNS label/);
  assert.throws(
    () => defineOperator({ name: "x", controllers: [controller, controller] }),
    /two controllers are named "gadget"/,
  );
  const Other = defineResource({
    group: "gadgets.example.com",
    version: "v2",
    kind: "Gadget",
    spec: z.object({}),
  });
  assert.throws(
    () => defineOperator({ name: "x", controllers: [controller], resources: [Other] }),
    /two different definitions of CRD "gadgets.gadgets.example.com"/,
  );
  const def = defineOperator({ name: "x", version: "2.0.0", controllers: [controller] });
  assert.equal(def.image, "x:2.0.0");
  assert.deepEqual(def.leaderElection, { enabled: false, leaseName: "x", namespace: undefined });
});

Deno.test("runSettings: defaults, leader election and watch namespaces", () => {
  const def = defineOperator({
    name: "x",
    controllers: [controller],
    leaderElection: { enabled: true, leaseName: "x-lock" },
  });
  const s = runSettings(def, { namespace: "ops", "watch-namespace": "a,b" });
  assert.deepEqual(s, {
    watchNamespaces: ["a", "b"],
    leaderElection: {
      name: "x-lock",
      namespace: "ops",
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    },
    watchStallTimeoutMs: 600_000,
    startupTimeoutMs: 120_000,
    shutdownTimeoutMs: 15_000,
    metricsAddress: ":8443",
    metrics: { address: ":8443", secure: true, certPath: undefined },
    healthAddress: ":8081",
    webhook: undefined,
    memoryLimit: undefined,
  });
  // Plain HTTP by flag, on kubebuilder's plain port; a certificate without HTTPS conflicts.
  assert.deepEqual(runSettings(def, { "metrics-secure": false }).metrics, {
    address: ":8080",
    secure: false,
    certPath: undefined,
  });
  assert.throws(
    () => runSettings(def, { "metrics-secure": false, "metrics-cert-path": "/certs" }),
    /conflict/,
  );
  const off = runSettings(def, {
    "leader-elect": false,
    "metrics-bind-address": "0",
    "health-probe-bind-address": "127.0.0.1:9000",
  });
  assert.equal(off.leaderElection, undefined);
  assert.equal(off.metricsAddress, undefined);
  assert.equal(off.healthAddress, "127.0.0.1:9000");
  assert.throws(() => runSettings(def, { "metrics-bind-address": "8080" }), /HOST:PORT/);

  // The seed's default: the pod's own namespace, unless a flag says otherwise.
  const seed = defineOperator({
    name: "x",
    controllers: [controller],
    watchNamespaces: ["pods-ns", ""],
  });
  assert.deepEqual(runSettings(seed, {}).watchNamespaces, ["pods-ns"]);
  assert.deepEqual(runSettings(seed, { "watch-namespace": "a" }).watchNamespaces, ["a"]);
  assert.deepEqual(runSettings(def, {}).watchNamespaces, []);

  const fast = runSettings(def, {
    "leader-elect-lease-duration": "3s",
    "leader-elect-renew-deadline": "2s",
    "leader-elect-retry-period": "500ms",
    "leader-elect-namespace": "locks",
    "watch-stall-timeout": "1m30s",
    "startup-timeout": "30s",
  });
  assert.deepEqual(fast.leaderElection, {
    name: "x-lock",
    namespace: "locks",
    leaseDurationMs: 3_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 500,
  });
  assert.equal(fast.watchStallTimeoutMs, 90_000);
  assert.equal(fast.startupTimeoutMs, 30_000);
  assert.throws(() => runSettings(def, { "startup-timeout": "0s" }), /"--startup-timeout"/);
  assert.throws(
    () => runSettings(def, { "leader-elect-lease-duration": "2s" }),
    /lease duration > renew deadline/,
  );
  assert.throws(
    () => runSettings(def, { "leader-elect-retry-period": "soon" }),
    /"--leader-elect-retry-period" takes a duration/,
  );
  // Inconsistent durations do not matter without leader election.
  assert.equal(
    runSettings(def, { "leader-elect": false, "leader-elect-lease-duration": "1s" })
      .leaderElection,
    undefined,
  );

  assert.throws(
    () => defineOperator({ name: "z", controllers: [], leaderElection: { retryPeriodMs: 0 } }),
    (e) => e instanceof RangeError && /leaderElection\.retryPeriodMs must be > 0/.test(e.message),
  );
  const timed = defineOperator({
    name: "y",
    controllers: [controller],
    leaderElection: {
      enabled: true,
      leaseDurationMs: 4_000,
      renewDeadlineMs: 3_000,
      retryPeriodMs: 1_000,
    },
  });
  assert.deepEqual(runSettings(timed, { namespace: "ops" }).leaderElection, {
    name: "y",
    namespace: "ops",
    leaseDurationMs: 4_000,
    renewDeadlineMs: 3_000,
    retryPeriodMs: 1_000,
  });
  assert.throws(
    () => runSettings(timed, { namespace: "ops", "leader-elect-renew-deadline": "5s" }),
    /lease duration > renew deadline/,
  );
});

Deno.test("describeError: one line with a hint; stacks only for bugs in debug mode", () => {
  const conn = new ConnectionError(
    "https://127.0.0.1:1",
    "get",
    new TypeError("Connection refused"),
  );
  const [line, ...more] = describeError(conn, true);
  assert.match(
    line,
    /^Cannot get from Kubernetes API server "https:\/\/127\.0\.0\.1:1": .*; check that/,
  );
  assert.deepEqual(more, []);
  // The hint follows what is wrong with the kubeconfig.
  const kc = (problem: string) => describeError(new KubeconfigError("/k", problem), false)[0];
  assert.match(kc("file does not exist"), /pass --kubeconfig PATH or set KUBECONFIG$/);
  assert.match(kc('context "x" does not exist (contexts: "a")'), /pass one of its contexts/);
  assert.match(kc("bad"), /fix the file, or pass another one with --kubeconfig$/);
  const tls = new ConnectionError(
    "https://127.0.0.1:1",
    "get",
    new Error("invalid peer certificate: UnknownIssuer"),
  );
  assert.match(describeError(tls, false)[0], /the server's certificate is not trusted/);
  const bug = new TypeError("x is undefined");
  assert.deepEqual(describeError(bug, false), [
    "x is undefined; this is a bug; rerun with --log-level debug for the stack",
  ]);
  assert.equal(describeError(bug, true).length, 2);
  assert.equal(
    describeError(new Deno.errors.PermissionDenied("Requires net access"), true).length,
    1,
  );
});

Deno.test("defineOperator: a primary with dependents gets its CRD labelled an ApplySet parent type", async () => {
  const { dependents } = await import("../runtime/dependents/dependents.ts");
  const graph = dependents(Gadget, {
    config: { resource: ConfigMap, desired: () => ({ metadata: { name: "c" }, data: {} }) },
  });
  const withGraph = reconcile(Gadget, { owns: [graph], reconcile() {} });
  const labels = (def: ReturnType<typeof defineOperator>) =>
    Object.fromEntries(
      def.installs.map((i) => [i.crd.metadata.name, i.crd.metadata.labels ?? {}]),
    );
  const def = defineOperator({
    name: "gadget-operator",
    controllers: [withGraph],
    resources: [Extra],
  });
  assert.deepEqual(labels(def), {
    "gadgets.gadgets.example.com": { "applyset.kubernetes.io/is-parent-type": "true" },
    "parts.gadgets.example.com": {},
  });
  const plain = defineOperator({ name: "gadget-operator", controllers: [controller] });
  assert.deepEqual(labels(plain), { "gadgets.gadgets.example.com": {} });
});

Deno.test("a fleet operator: manifests prints the hub set, --member the member set; bad input is one line", async () => {
  const provider = { name: "test provider", run: () => Promise.resolve() };
  const fleetOp = { name: "fleet-op", controllers: [controller], fleet: { clusters: provider } };
  const hub = await run(["manifests"], fleetOp);
  assert.equal(hub.code, 0, hub.err.join("\n"));
  const hubKinds = fromYaml(hub.out).map((o) => (o as { kind: string }).kind);
  assert.ok(hubKinds.includes("Deployment") && hubKinds.includes("ServiceAccount"), hub.out);
  assert.ok(!hubKinds.includes("ClusterRole"), "the controllers' RBAC belongs on the members");
  const member = await run(["manifests", "--member"], fleetOp);
  assert.equal(member.code, 0, member.err.join("\n"));
  const memberKinds = fromYaml(member.out).map((o) => (o as { kind: string }).kind);
  assert.ok(memberKinds.includes("ClusterRole") && !memberKinds.includes("Deployment"));
  const single = await run(["manifests", "--member"]);
  assert.equal(single.code, 2);
  assert.deepEqual(single.err, [
    'gadget-operator: Flag "--member" needs a fleet operator: operator({ fleet }); run "gadget-operator manifests --help" for usage',
  ]);
  const helm = await run(["manifests", "--helm", "/tmp/x"], fleetOp);
  assert.equal(helm.code, 2);
  assert.equal(helm.err.length, 1);
  assert.throws(
    () => defineOperator({ ...fleetOp, leaderElection: true }),
    /Cannot define operator "fleet-op": fleet excludes leaderElection; spread the members over replicas with sharding/,
  );
  assert.throws(
    () => defineOperator({ ...fleetOp, sharding: { shards: 4 } }),
    /sharding.shards is not for a fleet/,
  );
});

Deno.test("a fleet operator: manifests --out writes the hub set, the member set and where each CRD goes", async () => {
  const provider = { name: "test provider", run: () => Promise.resolve() };
  const fleetOp = {
    name: "fleet-op",
    controllers: [controller],
    resources: [Extra],
    fleet: { clusters: provider, hubReads: [Extra], hubNamespace: "fleet-system" },
  };
  const dir = await Deno.makeTempDir();
  try {
    const r = await run(["manifests", "--out", `${dir}/deploy`], fleetOp);
    assert.equal(r.code, 0, r.err.join("\n"));
    const names = (file: string) =>
      fromYaml(Deno.readTextFileSync(`${dir}/deploy/${file}`)).map((o) => {
        const obj = o as { kind: string; metadata: { name: string } };
        return `${obj.kind}/${obj.metadata.name}`;
      });
    assert.deepEqual(r.out.split("\n").map((l) => l.replace(dir, "")), [
      "/deploy/hub.yaml written (5 objects)",
      "/deploy/hub-crds.yaml written (1 objects)",
      "/deploy/member.yaml written (4 objects)",
      "/deploy/member-crds.yaml written (2 objects)",
    ]);
    // The same sets as "manifests" and "manifests --member" print.
    assert.deepEqual(
      names("hub.yaml"),
      fromYaml((await run(["manifests"], fleetOp)).out).map((o) => {
        const obj = o as { kind: string; metadata: { name: string } };
        return `${obj.kind}/${obj.metadata.name}`;
      }),
    );
    assert.deepEqual(names("hub-crds.yaml"), [
      "CustomResourceDefinition/parts.gadgets.example.com",
    ]);
    assert.deepEqual(names("member-crds.yaml"), [
      "CustomResourceDefinition/gadgets.gadgets.example.com",
      "CustomResourceDefinition/parts.gadgets.example.com",
    ]);
    assert.ok(names("member.yaml").includes("ClusterRole/fleet-op-member"));
    const both = await run(["manifests", "--out", dir, "--member"], fleetOp);
    assert.equal(both.code, 2);
    assert.match(both.err[0], /Flags "--out" and "--member" cannot be combined/);
    await Deno.writeTextFile(`${dir}/file`, "");
    const onFile = await run(["manifests", "--out", `${dir}/file`], fleetOp);
    assert.equal(onFile.code, 2);
    assert.match(onFile.err[0], /takes a directory, and ".*\/file" is a file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a fleet operator with replicas: the Deployment runs them, the hub's Role grants the Leases", async () => {
  const provider = { name: "test provider", run: () => Promise.resolve() };
  const fleetOp = {
    name: "fleet-op",
    namespace: "fleet-system",
    controllers: [controller],
    sharding: { replicas: 3 },
    fleet: { clusters: provider },
  };
  const hub = await run(["manifests"], fleetOp);
  assert.equal(hub.code, 0, hub.err.join("\n"));
  // deno-lint-ignore no-explicit-any
  const objects = fromYaml(hub.out) as any[];
  const deployment = objects.find((o) => o.kind === "Deployment");
  assert.equal(deployment.spec.replicas, 3);
  const c = deployment.spec.template.spec.containers[0];
  assert.ok(!c.args.includes("--leader-elect"), c.args.join(" "));
  assert.ok(
    c.env.some((e: { name: string }) => e.name === "POD_NAME"),
    "identity from the pod name",
  );
  const role = objects.find((o) => o.kind === "Role" && o.metadata.namespace === "fleet-system");
  assert.ok(
    role?.rules.some((r: { resources: string[]; verbs: string[] }) =>
      r.resources.includes("leases") && r.verbs.includes("delete") && r.verbs.includes("watch")
    ),
    hub.out,
  );
  const member = await run(["manifests", "--member"], fleetOp);
  assert.doesNotMatch(member.out, /leases/, "the Leases live on the hub only");
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => defineOperator({ ...fleetOp, fleet: { clusters: {} as any } }),
    /fleet.clusters must be a cluster provider/,
  );
});

Deno.test("operator({ retry }) is the default of every controller; a controller's own fields win", () => {
  const plain = reconcile(ConfigMap, { name: "plain", reconcile() {} });
  const own = reconcile(ConfigMap, { name: "own", retry: { maxAttempts: 2 }, reconcile() {} });
  const def = defineOperator({
    name: "x",
    controllers: [plain, own],
    retry: { baseDelayMs: 100, maxAttempts: 5 },
  });
  assert.deepEqual(def.controllers.map((c) => c.retry), [
    { baseDelayMs: 100, maxDelayMs: 1_000_000, maxAttempts: 5 },
    { baseDelayMs: 100, maxDelayMs: 1_000_000, maxAttempts: 2 },
  ]);
  assert.equal(defineOperator({ name: "x", controllers: [plain] }).controllers[0], plain);
  assert.throws(
    () => defineOperator({ name: "x", controllers: [plain], retry: { maxDelayMs: -1 } }),
    /Cannot define operator "x": retry\.maxDelayMs must be a finite number >= 0, got "-1"/,
  );
});
