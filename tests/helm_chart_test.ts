// The Helm chart an operator writes (`manifests --helm DIR`), checked with the real helm
// (built from the Go module proxy next to the control-plane binaries, see tests/_helm.ts):
// `helm lint` is clean; with default values `helm template` renders exactly the objects
// `manifests` prints (the Namespace aside: `helm install --create-namespace` makes it);
// other values render what they say; and against a control plane with workloads, `helm
// install` gets the CRDs Established, the RBAC in place and the operator's Deployment Ready
// on kwok's fake nodes, `helm upgrade --set-string image.tag=...` rolls it, and `helm
// uninstall` removes the release but leaves the CRDs and the custom resources.
//
// The README's commands ("Installing with Helm"), as written: `deno run -A examples/myapp.ts
// manifests --helm chart`, `helm install myapp-operator ./chart --namespace
// myapp-operator-system --create-namespace`, `helm upgrade ... --set-string image.tag=0.1.1`,
// `helm uninstall ...`, with the cluster in KUBECONFIG; and `kubectl apply --server-side -f
// chart/crds/`, which the README gives for a newer release's CRDs. They run in a temporary
// folder (where `chart` is written) instead of the checkout.
//
// Under kwok "Ready" means: the Deployment controller created the pod, the API server admitted
// it (ServiceAccount, security context, volumes), the scheduler placed it on a fake node, and
// kwok marked it Ready. No container runs there, so the operator itself is not started: its
// readiness probe is not consulted. The operator running in a cluster is shown elsewhere (the
// examples' local runs, the chaos tests).
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { createClient, Deployment, isNotFound } from "../mod.ts";
import { ClusterRole, CustomResourceDefinition, ServiceAccount } from "../core.ts";
import { startControlPlane } from "../testing.ts";
import { fromYaml } from "../src/util/yaml.ts";
import type { KubeObject } from "../src/core/object.ts";
import { findHelm } from "./_helm.ts";
import { waitFor } from "./_helpers.ts";
import { MYAPP_EXAMPLE as EXAMPLE, MYAPP_SAMPLE as SAMPLE } from "./_examples.ts";

const NAME = "myapp-operator";
const NS = "myapp-operator-system";
const CRD = "myapps.apps.kubeno.dev";
const helm = await findHelm();
const dec = new TextDecoder();
const skipped = helm.path ? "" : ` (skipped: ${helm.reason})`;

async function run(cmd: string, args: string[], env: Record<string, string> = {}, cwd?: string) {
  const out = await new Deno.Command(cmd, { args, env, cwd, stdout: "piped", stderr: "piped" })
    .output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** The example's program: `manifests` and `manifests --helm chart`, run in `cwd`. */
function operator(cwd: string | undefined, ...args: string[]) {
  return run(Deno.execPath(), ["run", "-A", EXAMPLE, ...args], {
    NO_COLOR: "1",
    POD_NAMESPACE: "",
    WATCH_NAMESPACE: "",
  }, cwd);
}

const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

async function withChart(fn: (dir: string, helmEnv: Record<string, string>) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "kubeno-chart-" });
  try {
    const written = await operator(dir, "manifests", "--helm", "chart");
    assert.equal(written.code, 0, written.stderr);
    assert.match(
      written.stdout,
      /^Helm chart myapp-operator written to chart \(\d+ files\)\n$/,
    );
    await fn(`${dir}/chart`, {
      HELM_CACHE_HOME: `${dir}/helm/cache`,
      HELM_CONFIG_HOME: `${dir}/helm/config`,
      HELM_DATA_HOME: `${dir}/helm/data`,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name:
    `helm lint is clean; helm template with default values renders what manifests prints${skipped}`,
  ignore: !helm.path,
  fn: () =>
    withChart(async (chart, env) => {
      const lint = await run(helm.path!, ["lint", "--strict", chart], env);
      console.log(`helm lint --strict:\n${lint.stdout.trim()}`);
      assert.equal(lint.code, 0, lint.stdout + lint.stderr);
      assert.match(lint.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(lint.stdout, /\[(WARNING|ERROR)\]/);

      const template = await run(
        helm.path!,
        ["template", NAME, chart, "--namespace", NS, "--include-crds"],
        env,
      );
      assert.equal(template.code, 0, template.stderr);
      const rendered = fromYaml(template.stdout) as KubeObject[];
      const manifests = await operator(undefined, "manifests");
      assert.equal(manifests.code, 0, manifests.stderr);
      const printed = fromYaml(manifests.stdout) as KubeObject[];
      // The one difference, by design: the release's namespace is helm's to create.
      assert.deepEqual(printed.filter((o) => o.kind === "Namespace").map(key), [
        `Namespace//${NS}`,
      ]);
      const expected = new Map(
        printed.filter((o) => o.kind !== "Namespace").map((o) => [key(o), o]),
      );
      const got = new Map(rendered.map((o) => [key(o), o]));
      assert.deepEqual([...got.keys()].sort(), [...expected.keys()].sort());
      for (const [k, o] of expected) {
        assert.ok(
          isDeepStrictEqual(got.get(k), o),
          `${k} differs:\n${JSON.stringify(got.get(k))}\n${JSON.stringify(o)}`,
        );
      }
      console.log(
        `helm template == manifests: ${got.size} objects (${[...got.keys()].join(", ")})`,
      );

      // Other values render what they say.
      const set = await run(helm.path!, [
        "template",
        NAME,
        chart,
        "--namespace",
        "ops",
        "--set",
        "watchNamespaces={team-a,team-b}",
        "--set",
        "metrics.enabled=false",
        "--set",
        "leaderElection.enabled=false",
        "--set",
        "webhook.certificates.mode=cert-manager",
        "--set",
        "replicas=2",
        "--set",
        "nodeSelector.disk=ssd",
        "--set",
        "tolerations[0].operator=Exists",
        "--set-string",
        "image.tag=0.1.1",
      ], env);
      assert.equal(set.code, 0, set.stderr);
      const objs = fromYaml(set.stdout) as any[];
      const dep = objs.find((o) => o.kind === "Deployment");
      const c = dep.spec.template.spec.containers[0];
      assert.equal(dep.metadata.namespace, "ops");
      assert.equal(dep.spec.replicas, 2);
      assert.equal(c.image, "ghcr.io/kubeno/myapp-operator:0.1.1");
      assert.deepEqual(c.args, [
        "run",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=:8081",
        "--graceful-shutdown-timeout=15s",
        "--watch-namespace=team-a,team-b",
        "--webhook-port=9443",
        "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
      ]);
      assert.deepEqual(dep.spec.template.spec.nodeSelector, { disk: "ssd" });
      assert.deepEqual(dep.spec.template.spec.tolerations, [{ operator: "Exists" }]);
      assert.equal(
        dep.spec.template.spec.volumes.find((v: any) => v.name === "webhook-certs").secret
          .secretName,
        "myapp-operator-webhook-tls",
      );
      const roles = objs.filter((o) => o.kind === "Role" && o.metadata.name === NAME);
      assert.deepEqual(roles.map((r) => r.metadata.namespace).sort(), ["team-a", "team-b"]);
      assert.ok(!objs.some((o) => o.metadata.name === `${NAME}-metrics`), "no metrics Service");
      assert.ok(!objs.some((o) => o.metadata.name === `${NAME}-webhook-certs`));
      const cert = objs.find((o) => o.kind === "Certificate");
      assert.deepEqual(cert.spec.dnsNames, [
        "myapp-operator-webhook.ops.svc",
        "myapp-operator-webhook.ops.svc.cluster.local",
      ]);
      assert.equal(cert.spec.secretName, "myapp-operator-webhook-tls");
      // values.schema.json refuses what the chart cannot do.
      const bad = await run(helm.path!, [
        "template",
        NAME,
        chart,
        "--set",
        "webhook.certificates.mode=acme",
      ], env);
      assert.notEqual(bad.code, 0);
      assert.match(
        bad.stderr,
        /webhook\/certificates\/mode.*must be one of 'self-managed', 'secret', 'cert-manager'/,
      );
    }),
});

Deno.test({
  name: `helm install, upgrade and uninstall against a control plane with workloads${skipped}`,
  ignore: !helm.path,
  fn: () =>
    withChart(async (chart, env) => {
      await using cp = await startControlPlane({ workloads: true });
      using client = await createClient({ kubeconfig: cp.kubeconfigPath });
      // The user's shell: in the folder holding ./chart, the cluster in KUBECONFIG.
      const dir = dirname(chart);
      const shellEnv = { ...env, KUBECONFIG: cp.kubeconfigPath };
      const h = (...args: string[]) => run(helm.path!, args, shellEnv, dir);
      const kubectl = (...args: string[]) => run(cp.binary("kubectl"), args, shellEnv, dir);
      const deploymentReady = (image: string) =>
        waitFor(async () => {
          const d = await client.get(Deployment, NAME, { namespace: NS });
          const s = d.status;
          const c = d.spec?.template.spec?.containers[0];
          return c?.image === image && s?.observedGeneration === d.metadata.generation &&
              s?.updatedReplicas === 1 && s?.readyReplicas === 1 && s?.replicas === 1
            ? d
            : undefined;
        }, { timeoutMs: 120_000, intervalMs: 250, what: `the Deployment Ready with ${image}` });

      const install = await h("install", NAME, "./chart", "--namespace", NS, "--create-namespace");
      assert.equal(install.code, 0, install.stderr);
      console.log(`helm install: ${
        install.stdout.split("\n").filter((l) => /^(NAME|STATUS|REVISION):/.test(l)).join(", ")
      }`);

      const crd = await waitFor(async () => {
        const c = await client.get(CustomResourceDefinition, CRD);
        return c.status?.conditions?.some((x) =>
            x.type === "Established" && x.status === "True"
          )
          ? c
          : undefined;
      }, { what: "the CRD Established" });
      assert.deepEqual(crd.spec.versions.map((v) => v.name), ["v1alpha1"]);

      // RBAC in place: what the controllers touch is allowed, nothing else.
      const sa = `system:serviceaccount:${NS}:${NAME}`;
      const can = async (...args: string[]) =>
        (await cp.kubectl("auth", "can-i", ...args, `--as=${sa}`)).stdout.trim();
      assert.ok(await client.get(ServiceAccount, NAME, { namespace: NS }));
      assert.ok(await client.get(ClusterRole, NAME));
      assert.equal(await can("watch", CRD), "yes");
      assert.equal(await can("patch", "myapps/status", "-n", "default"), "yes");
      assert.equal(await can("create", "deployments.apps", "-n", "default"), "yes");
      // No conversion webhook in examples/myapp.ts: its CRD is not the operator's to update.
      assert.equal(await can("update", `customresourcedefinitions/${CRD}`), "no");
      assert.equal(await can("update", "customresourcedefinitions/other.example.com"), "no");
      assert.equal(await can("create", "leases.coordination.k8s.io", "-n", NS), "yes");
      assert.equal(await can("get", "secrets", "-n", "default"), "no");

      const first = await deploymentReady("ghcr.io/kubeno/myapp-operator:0.1.0");
      const pods = await cp.kubectl("get", "pods", "-n", NS, "-o", "wide");
      console.log(`after install:\n${pods.stdout.trim()}`);

      // README: a newer release's CRDs go in with `kubectl apply --server-side -f chart/crds/`
      // before `helm upgrade` (Helm never updates crds/).
      const crds = await kubectl("apply", "--server-side", "-f", "chart/crds/");
      assert.equal(crds.code, 0, crds.stderr);
      assert.equal(
        crds.stdout.trim(),
        `customresourcedefinition.apiextensions.k8s.io/${CRD} serverside-applied`,
      );
      const upgrade = await h(
        "upgrade",
        NAME,
        "./chart",
        "--namespace",
        NS,
        "--set-string",
        "image.tag=0.1.1",
      );
      assert.equal(upgrade.code, 0, upgrade.stderr);
      assert.match(upgrade.stdout, /REVISION: 2/);
      const second = await deploymentReady("ghcr.io/kubeno/myapp-operator:0.1.1");
      assert.ok(second.metadata.generation! > first.metadata.generation!);
      // The rollout replaced the pod: the one left runs the new image.
      await waitFor(async () => {
        const r = await cp.kubectl(
          "get",
          "pods",
          "-n",
          NS,
          "-o",
          'jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase}{"\\n"}{end}',
        );
        const lines = r.stdout.trim().split("\n").filter(Boolean);
        return lines.length === 1 && lines[0] === "ghcr.io/kubeno/myapp-operator:0.1.1 Running";
      }, { timeoutMs: 120_000, intervalMs: 250, what: "only the upgraded pod left" });
      const history = await h("history", NAME, "--namespace", NS);
      console.log(`helm history:\n${history.stdout.trim()}`);

      const uninstall = await h("uninstall", NAME, "--namespace", NS);
      assert.equal(uninstall.code, 0, uninstall.stderr);
      console.log(`helm uninstall: ${uninstall.stdout.trim()}`);
      await waitFor(async () => {
        try {
          await client.get(Deployment, NAME, { namespace: NS });
          return false;
        } catch (err) {
          return isNotFound(err);
        }
      }, { what: "the Deployment gone" });
      for (
        const get of [
          () => client.get(ServiceAccount, NAME, { namespace: NS }),
          () => client.get(ClusterRole, NAME),
        ]
      ) {
        await assert.rejects(get(), (err) => isNotFound(err));
      }
      // Helm's crds/ rule: the CRDs, and with them every custom resource, stay.
      const kept = await client.get(CustomResourceDefinition, CRD);
      assert.ok(
        kept.status?.conditions?.some((x) => x.type === "Established" && x.status === "True"),
      );
      console.log(`after uninstall: CRD ${CRD} still Established`);

      // And the custom resources with it: a Myapp made now (no webhook is registered while
      // no release is installed) outlives another install and uninstall.
      const sample = await kubectl("apply", "-f", SAMPLE);
      assert.equal(sample.code, 0, sample.stderr);
      const again = await h("install", NAME, "./chart", "--namespace", NS, "--create-namespace");
      assert.equal(again.code, 0, again.stderr);
      const gone = await h("uninstall", NAME, "--namespace", NS);
      assert.equal(gone.code, 0, gone.stderr);
      const left = await kubectl("get", "myapps", "-n", "default", "-o", "name");
      assert.equal(left.stdout.trim(), "myapp.apps.kubeno.dev/myapp-sample", left.stderr);
      console.log(`after a second install and uninstall: ${left.stdout.trim()} still there`);
    }),
});
