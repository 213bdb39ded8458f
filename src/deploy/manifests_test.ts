import assert from "node:assert/strict";
import { operatorManifests, type OperatorManifestsInit } from "./manifests.ts";
import { resource } from "../core/resource.ts";

const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
const crd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.com" },
};
const base: OperatorManifestsInit = {
  name: "widget-operator",
  version: "1.2.3",
  controllers: [{ name: "widget", resource: Widget, owns: [ConfigMap], watches: [] }],
  crds: [crd],
  namespace: "widgets",
  image: "registry.example/widget:1.2.3",
};

// deno-lint-ignore no-explicit-any
const find = (objs: any[], kind: string, name?: string) =>
  objs.find((o) => o.kind === kind && (!name || o.metadata.name === name));

Deno.test("operatorManifests: groups, apply order and names", () => {
  const m = operatorManifests(base);
  assert.deepEqual(m.crds, [crd]);
  assert.notEqual(m.crds[0], crd, "CRDs are copies");
  assert.deepEqual(m.all.map((o) => `${o.kind}/${o.metadata.name}`), [
    "CustomResourceDefinition/widgets.example.com",
    "Namespace/widgets",
    "ServiceAccount/widget-operator",
    "ClusterRole/widget-operator",
    "ClusterRole/widget-operator-metrics-auth",
    "ClusterRole/widget-operator-metrics-reader",
    "Role/widget-operator-leader-election",
    "ClusterRoleBinding/widget-operator",
    "ClusterRoleBinding/widget-operator-metrics-auth",
    "RoleBinding/widget-operator-leader-election",
    "Service/widget-operator-metrics",
    "Deployment/widget-operator",
  ]);
  assert.deepEqual(m.webhooks, []);
  const crb = find(m.rbac, "ClusterRoleBinding");
  assert.deepEqual(crb.subjects, [{
    kind: "ServiceAccount",
    name: "widget-operator",
    namespace: "widgets",
  }]);
  assert.deepEqual(crb.roleRef, {
    apiGroup: "rbac.authorization.k8s.io",
    kind: "ClusterRole",
    name: "widget-operator",
  });
  assert.equal(find(m.rbac, "Role").metadata.namespace, "widgets");
});

Deno.test("operatorManifests: the Deployment is locked down, probed and leader-elected", () => {
  const dep = find(operatorManifests(base).all, "Deployment");
  assert.equal(dep.metadata.namespace, "widgets");
  const pod = dep.spec.template.spec;
  assert.equal(pod.serviceAccountName, "widget-operator");
  assert.deepEqual(dep.spec.selector.matchLabels, { "app.kubernetes.io/name": "widget-operator" });
  assert.equal(dep.spec.template.metadata.labels["app.kubernetes.io/name"], "widget-operator");
  const [c] = pod.containers;
  assert.equal(c.image, "registry.example/widget:1.2.3");
  assert.deepEqual(c.args, [
    "run",
    "--leader-elect",
    "--metrics-bind-address=:8443",
    "--health-probe-bind-address=:8081",
    "--graceful-shutdown-timeout=15s",
  ]);
  // SIGKILL comes after the grace period: the drain (15 s) and the Lease release (at most
  // the renew deadline, 10 s) fit inside it.
  assert.ok(pod.terminationGracePeriodSeconds * 1_000 >= 15_000 + 10_000);
  assert.deepEqual(c.securityContext, {
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  });
  assert.equal(c.livenessProbe.httpGet.path, "/healthz");
  assert.equal(c.readinessProbe.httpGet.path, "/readyz");
  assert.deepEqual(c.ports.map((p: { containerPort: number }) => p.containerPort), [8443, 8081]);
  assert.deepEqual(c.env, [{
    name: "POD_NAMESPACE",
    valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
  }, {
    // The heap budget of the memory limit (src/util/memory_limit.ts), so `run` need not restart.
    name: "DENO_V8_FLAGS",
    value: "--max-old-space-size=144,--max-semi-space-size=4",
  }, {
    // glibc's mmap threshold fixed, so freed multi-MiB buffers leave the resident set.
    name: "MALLOC_MMAP_THRESHOLD_",
    value: "1048576",
  }]);
  assert.deepEqual(c.resources.limits, { memory: "256Mi" });
});

Deno.test("operatorManifests with watchNamespaces: Roles per namespace instead of a ClusterRole", () => {
  const m = operatorManifests({ ...base, watchNamespaces: ["a", "b", "a"] });
  // Only the secure-metrics roles are cluster-wide (TokenReviews, SubjectAccessReviews).
  assert.deepEqual(
    m.all.filter((o) => o.kind?.startsWith("Cluster")).map((o) => o.metadata.name),
    [
      "widget-operator-metrics-auth",
      "widget-operator-metrics-reader",
      "widget-operator-metrics-auth",
    ],
  );
  const roles = m.rbac.filter((o) => o.kind === "Role" && o.metadata.name === "widget-operator");
  assert.deepEqual(roles.map((r) => r.metadata.namespace), ["a", "b"]);
  const bindings = m.rbac.filter((o) =>
    o.kind === "RoleBinding" && o.metadata.name === "widget-operator"
  );
  assert.deepEqual(bindings.map((r) => r.metadata.namespace), ["a", "b"]);
  const c = find(m.all, "Deployment").spec.template.spec.containers[0];
  assert(c.args.includes("--watch-namespace=a,b"));
});

Deno.test("operatorManifests with webhooks: Service, port, merged configurations and rules", () => {
  const hook = (name: string) => ({
    manifests: (ctx: { serviceName: string; namespace: string }) => [{
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "widget-operator" },
      webhooks: [{
        name,
        clientConfig: { service: { name: ctx.serviceName, namespace: ctx.namespace } },
      }],
    }],
    rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get", "update"] }],
  });
  const m = operatorManifests({
    ...base,
    webhooks: [hook("a.example.com"), hook("b.example.com")],
  });
  const svc = find(m.webhooks, "Service");
  assert.equal(svc.metadata.name, "widget-operator-webhook");
  assert.deepEqual(svc.spec.ports[0], {
    name: "webhook",
    port: 443,
    targetPort: "webhook",
    protocol: "TCP",
  });
  const cfgs = m.webhooks.filter((o) => o.kind === "ValidatingWebhookConfiguration");
  assert.equal(cfgs.length, 1);
  // deno-lint-ignore no-explicit-any
  assert.deepEqual((cfgs[0] as any).webhooks.map((w: any) => w.name), [
    "a.example.com",
    "b.example.com",
  ]);
  assert.equal(m.all.at(-1)!.kind, "ValidatingWebhookConfiguration");
  const c = find(m.all, "Deployment").spec.template.spec.containers[0];
  assert(c.args.includes("--webhook-port=9443"));
  assert(c.ports.some((p: { name: string }) => p.name === "webhook"));
  // The certificate Secret by name; create cannot be limited by name. The hooks' own rule
  // once, though both hooks declare it.
  assert.deepEqual(find(m.rbac, "Role", "widget-operator-webhook").rules, [
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    {
      apiGroups: [""],
      resources: ["secrets"],
      resourceNames: ["widget-operator-webhook-certs"],
      verbs: ["get", "update", "patch"],
    },
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "update"] },
  ]);
  // caBundle patching of its own configurations only, by name.
  const caRule = find(m.rbac, "ClusterRole").rules.find((r: { apiGroups: string[] }) =>
    r.apiGroups[0] === "admissionregistration.k8s.io"
  );
  assert.deepEqual(caRule.resourceNames, ["widget-operator"]);
  assert.deepEqual(caRule.verbs, ["get", "patch", "update"]);
});

Deno.test("operatorManifests adds a ServiceMonitor of the metrics Service only when asked", () => {
  assert.equal(operatorManifests(base).all.some((o) => o.kind === "ServiceMonitor"), false);
  const m = operatorManifests({ ...base, serviceMonitor: true });
  const monitor = m.operator.find((o) => o.kind === "ServiceMonitor") as any;
  assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
  // It selects the metrics Service (labels and namespace) through a port that Service has.
  const services = m.all.filter((o) => o.kind === "Service") as any[];
  const selected = services.filter((s) =>
    s.metadata.namespace === monitor.spec.namespaceSelector.matchNames[0] &&
    Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels[k] === v)
  );
  const scraped = selected.filter((s) =>
    s.spec.ports.some((p: any) => p.name === monitor.spec.endpoints[0].port)
  );
  assert.deepEqual(scraped.map((s) => s.metadata.name), [`${base.name}-metrics`]);
  assert.equal(monitor.spec.endpoints[0].scheme, "https");
});
