/**
 * Everything needed to deploy an operator, generated from the definitions compiled into it:
 * its CRDs, Namespace, ServiceAccount, least-privilege RBAC, Deployment and, when it serves
 * webhooks, their Service and configurations. Pure: nothing is read from disk or the cluster.
 *
 * @module
 */
import { bindingObject, namespaceObject, roleObject, serviceAccountObject } from "./objects.ts";
import type { PolicyRule } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import { deriveRbac, type OperatorController } from "./rbac.ts";
import type { OperatorWebhook } from "../webhook/manifests.ts";
import { usesConversionWebhook, withConversionWebhook } from "../webhook/conversion_config.ts";
import { heapBudget, heapFlags, MALLOC_ENV, parseMemoryQuantity } from "../util/memory_limit.ts";

/** What {@link operatorManifests} generates from. */
export interface OperatorManifestsInit {
  /** The operator's name; names the ServiceAccount, roles, bindings and Deployment. */
  name: string;
  /** The operator's version, set as the `app.kubernetes.io/version` label. */
  version: string;
  /** The controllers, for RBAC. */
  controllers: readonly OperatorController[];
  /** The CRDs to install. */
  crds: readonly KubeObject[];
  /** The operator's namespace. */
  namespace: string;
  /** The container image of the Deployment. */
  image: string;
  /**
   * Namespaces the operator watches; RBAC for namespaced kinds is then a Role and
   * RoleBinding in each of them instead of a ClusterRole.
   * @default all namespaces
   */
  watchNamespaces?: readonly string[];
  /**
   * Admission webhooks; they add a Service and their configurations.
   * @default []
   */
  webhooks?: readonly OperatorWebhook[];
  /**
   * Extra RBAC rules (see `OperatorOptions.rules`).
   * @default []
   */
  rules?: readonly PolicyRule[];
  /**
   * Port of `/metrics`, served over HTTPS to callers the API server authenticates and
   * authorizes (kubebuilder v4's secure metrics).
   * @default 8443
   */
  metricsPort?: number;
  /**
   * Add a `ServiceMonitor` (`monitoring.coreos.com/v1`, the Prometheus Operator's) that
   * scrapes the metrics Service over HTTPS with the scraper's service-account token, as
   * kubebuilder's `config/prometheus/monitor.yaml`; bind `<name>-metrics-reader` to the
   * Prometheus service account. Needs the Prometheus Operator's CRDs in the cluster.
   * @default false
   */
  serviceMonitor?: boolean;
  /**
   * The leader's renew deadline, which also bounds how long releasing the Lease may take
   * on shutdown; the pod's grace period makes room for it.
   * @default 10_000
   */
  renewDeadlineMs?: number;
  /**
   * Port of `/healthz` and `/readyz`.
   * @default 8081
   */
  healthPort?: number;
  /**
   * A sharded operator (`operator({ sharding })`): the Deployment runs `replicas` pods without
   * `--leader-elect`, each named by `POD_NAME`, and the Role on Leases adds `list`, `watch` and
   * `delete` (members watch the shard Leases and fence a silent member's).
   * @default not sharded
   */
  sharding?: { replicas: number };
  /**
   * Port of the webhook server.
   * @default 9443
   */
  webhookPort?: number;
}

/** The generated objects, by the file `manifests --out` writes them to. */
export interface OperatorManifests {
  /** `crds.yaml`: the CustomResourceDefinitions. */
  crds: KubeObject[];
  /** `operator.yaml`: the Namespace, ServiceAccount and Deployment. */
  operator: KubeObject[];
  /** `rbac.yaml`: roles and bindings. */
  rbac: KubeObject[];
  /** `webhooks.yaml`: the webhook Service and configurations; empty without webhooks. */
  webhooks: KubeObject[];
  /** Everything, in an order that applies cleanly in one pass. */
  all: KubeObject[];
}

/**
 * The generated Deployment's memory limit. `run` sizes the V8 heap to it (the Deployment's
 * DENO_V8_FLAGS carries the same budget, so no restart is needed); a 256Mi operator holds
 * 10,000 converging objects with room to spare (tests/memory_limit_test.ts).
 */
export const DEFAULT_MEMORY_LIMIT = "256Mi";

/** The generated Deployment's memory request: an operator's resident memory once loaded. */
export const DEFAULT_MEMORY_REQUEST = "128Mi";

/**
 * The DENO_V8_FLAGS for a container memory limit: the heap budget `run` would otherwise
 * restart itself with (a compiled operator cannot: it has no FFI permission).
 *
 * @param limit A Kubernetes memory quantity, e.g. `256Mi`.
 * @returns E.g. `--max-old-space-size=144,--max-semi-space-size=4`.
 * @throws {RangeError} When `limit` is not a memory quantity.
 */
export function v8FlagsForLimit(limit: string): string {
  const bytes = parseMemoryQuantity(limit);
  if (bytes === undefined) throw new RangeError(`Cannot parse the memory limit "${limit}"`);
  return heapFlags(heapBudget(bytes));
}

/** The drain deadline for in-flight reconciles that the generated Deployment passes to `run`. */
export const GRACEFUL_SHUTDOWN_MS = 15_000;

/** What a stop needs besides the drain and the Lease release: closing the servers. */
const SHUTDOWN_MARGIN_MS = 5_000;

/**
 * The pod's `terminationGracePeriodSeconds`: room for the drain (`--graceful-shutdown-timeout`),
 * then for releasing the Lease (bounded by the renew deadline) and closing the servers, so
 * that the kubelet's SIGKILL never lands before the Lease is handed over.
 *
 * @param shutdownMs The drain deadline.
 * @param renewDeadlineMs The leader's renew deadline.
 * @returns Whole seconds.
 *
 * @example The defaults
 * ```ts
 * import { terminationGracePeriodSeconds } from "./manifests.ts";
 * if (terminationGracePeriodSeconds(15_000, 10_000) !== 30) throw new Error();
 * ```
 */
export function terminationGracePeriodSeconds(shutdownMs: number, renewDeadlineMs: number): number {
  return Math.ceil((shutdownMs + renewDeadlineMs + SHUTDOWN_MARGIN_MS) / 1_000);
}

const APPLY_ORDER = [
  "CustomResourceDefinition",
  "Namespace",
  "ServiceAccount",
  "ClusterRole",
  "Role",
  "ClusterRoleBinding",
  "RoleBinding",
  "Service",
  "Deployment",
];

/**
 * Generates an operator's deployment manifests. RBAC comes from {@link deriveRbac}: a
 * ClusterRole and ClusterRoleBinding (or, with `watchNamespaces`, a Role and RoleBinding in
 * each watched namespace, plus a ClusterRole for any cluster-scoped kinds), and a Role and
 * RoleBinding for the leader-election Lease in the operator's namespace. The Deployment runs
 * `run --leader-elect` as a non-root user with a read-only root filesystem, no privilege
 * escalation, all capabilities dropped and the runtime's default seccomp profile, probes
 * `/healthz` and `/readyz`, and gets `POD_NAMESPACE` from the downward API. Its grace period
 * covers the drain deadline it passes (`--graceful-shutdown-timeout`) plus the Lease release.
 *
 * `/metrics` is served as kubebuilder v4 scaffolds it: HTTPS on 8443 behind a `<name>-metrics`
 * Service, the operator allowed to create TokenReviews and SubjectAccessReviews
 * (`<name>-metrics-auth`), and a `<name>-metrics-reader` ClusterRole (`get /metrics`) to bind
 * to the scraper's ServiceAccount.
 *
 * @param init The operator's definitions and deployment settings.
 * @returns The objects, by file and in apply order.
 *
 * @example An operator's manifests
 * ```ts
 * import { operatorManifests } from "./manifests.ts";
 * import { resource } from "../core/resource.ts";
 * const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * const m = operatorManifests({
 *   name: "widget-operator",
 *   version: "1.0.0",
 *   controllers: [{ name: "widget", resource: Widget, owns: [], watches: [] }],
 *   crds: [],
 *   namespace: "widget-system",
 *   image: "widget-operator:1.0.0",
 * });
 * const kinds = m.all.map((o) => o.kind);
 * const expected = "Namespace,ServiceAccount,ClusterRole,ClusterRole,ClusterRole,Role," +
 *   "ClusterRoleBinding,ClusterRoleBinding,RoleBinding,Service,Deployment";
 * if (kinds.join() !== expected) {
 *   throw new Error(kinds.join());
 * }
 * ```
 */
export function operatorManifests(init: OperatorManifestsInit): OperatorManifests {
  const { name, namespace } = init;
  const labels = {
    "app.kubernetes.io/name": name,
    "app.kubernetes.io/version": init.version,
    "app.kubernetes.io/managed-by": "kubeno",
  };
  const meta = (n: string, ns?: string) => ({
    name: n,
    ...(ns ? { namespace: ns } : {}),
    labels: { ...labels },
  });
  const watch = [...new Set(init.watchNamespaces ?? [])];
  const webhooks = init.webhooks ?? [];
  // Multi-version CRDs convert through the operator's webhook server, behind the same Service.
  const conversionCrds = init.crds.filter(usesConversionWebhook).map((c) => c.metadata.name!);
  const serves = webhooks.length > 0 || conversionCrds.length > 0;
  const ports = {
    metrics: init.metricsPort ?? 8443,
    health: init.healthPort ?? 8081,
    webhook: init.webhookPort ?? 9443,
  };

  const rbac = deriveRbac(init.controllers, {
    scoped: watch.length > 0,
    extraRules: init.rules,
    sharded: init.sharding !== undefined,
  });
  if (webhooks.length) {
    // The webhook server patches caBundle into its own configurations (named after the
    // operator) at start-up and on certificate renewal; cluster-scoped, so a ClusterRole.
    rbac.cluster.push({
      apiGroups: ["admissionregistration.k8s.io"],
      resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
      resourceNames: [name],
      verbs: ["get", "patch", "update"],
    });
  }
  if (conversionCrds.length) {
    // It points its CRDs' conversion webhook at its Service and keeps their caBundle current.
    rbac.cluster.push({
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      resourceNames: conversionCrds,
      verbs: ["get", "patch", "update"],
    });
  }
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  const rbacObjects: KubeObject[] = [];
  if (rbac.cluster.length) {
    rbacObjects.push(
      roleObject("ClusterRole", meta(name), rbac.cluster),
      binding("ClusterRoleBinding", meta(name), "ClusterRole", name, subjects),
    );
  }
  // Secure /metrics: the operator reviews scrapers' tokens and permissions (bound to it), and
  // scrapers are granted `get /metrics` through the reader role (bound by whoever scrapes).
  rbacObjects.push(
    roleObject("ClusterRole", meta(`${name}-metrics-auth`), [
      { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
      {
        apiGroups: ["authorization.k8s.io"],
        resources: ["subjectaccessreviews"],
        verbs: ["create"],
      },
    ]),
    binding(
      "ClusterRoleBinding",
      meta(`${name}-metrics-auth`),
      "ClusterRole",
      `${name}-metrics-auth`,
      subjects,
    ),
    roleObject("ClusterRole", meta(`${name}-metrics-reader`), [
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ]),
  );
  // A Role per namespace: the watched namespaces' rules, plus those of kinds cached only in
  // some namespaces.
  const roleNamespaces = [
    ...(rbac.namespaced.length ? watch : []),
    ...Object.keys(rbac.inNamespaces).filter((ns) =>
      !(rbac.namespaced.length && watch.includes(ns))
    ),
  ];
  for (const ns of roleNamespaces) {
    const rules = [
      ...(watch.includes(ns) ? rbac.namespaced : []),
      ...(rbac.inNamespaces[ns] ?? []),
    ];
    rbacObjects.push(
      role(meta(name, ns), rules),
      binding("RoleBinding", meta(name, ns), "Role", name, subjects),
    );
  }
  const own: [string, PolicyRule[]][] = [[`${name}-leader-election`, rbac.leaderElection]];
  if (serves) {
    own.push([`${name}-webhook`, webhookRoleRules(name, webhooks.flatMap((w) => w.rules ?? []))]);
  }
  for (const [roleName, rules] of own) {
    rbacObjects.push(
      role(meta(roleName, namespace), rules),
      binding("RoleBinding", meta(roleName, namespace), "Role", roleName, subjects),
    );
  }

  const operatorObjects: KubeObject[] = [
    namespaceObject(meta(namespace)),
    serviceAccountObject(meta(name, namespace)),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta(`${name}-metrics`, namespace),
      spec: {
        selector: { "app.kubernetes.io/name": name },
        ports: [{ name: "https", port: ports.metrics, targetPort: "metrics", protocol: "TCP" }],
      },
    } as KubeObject,
    deployment(init, meta(name, namespace), watch, serves, ports),
  ];
  if (init.serviceMonitor) {
    operatorObjects.push({
      apiVersion: "monitoring.coreos.com/v1",
      kind: "ServiceMonitor",
      metadata: meta(`${name}-metrics`, namespace),
      spec: {
        // The webhook Service carries the same labels, but no port named "https".
        selector: { matchLabels: { ...labels } },
        namespaceSelector: { matchNames: [namespace] },
        endpoints: [{
          port: "https",
          path: "/metrics",
          scheme: "https",
          bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
          // The operator's serving certificate is self-signed unless one is supplied.
          tlsConfig: { insecureSkipVerify: true },
        }],
      },
    } as KubeObject);
  }

  const webhookObjects: KubeObject[] = [];
  const serviceName = `${name}-webhook`;
  if (serves) {
    webhookObjects.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: meta(serviceName, namespace),
      spec: {
        selector: { "app.kubernetes.io/name": name },
        ports: [{ name: "webhook", port: 443, targetPort: "webhook", protocol: "TCP" }],
      },
    } as KubeObject);
    const ctx = {
      operatorName: name,
      namespace,
      serviceName,
      servicePort: 443,
      containerPort: ports.webhook,
    };
    webhookObjects.push(...mergeConfigurations(webhooks.flatMap((w) => w.manifests(ctx))));
  }

  const crds = init.crds.map((c) =>
    withConversionWebhook(c, { service: { namespace, name: serviceName, port: 443 } })
  );
  const all = [...crds, ...operatorObjects, ...rbacObjects, ...webhookObjects]
    .map((o, i) => ({ o, i, rank: rank(o.kind) }))
    .sort((a, b) => a.rank - b.rank || a.i - b.i)
    .map(({ o }) => o);
  return { crds, operator: operatorObjects, rbac: rbacObjects, webhooks: webhookObjects, all };
}

/**
 * The webhook server's Role in the operator's namespace: its self-managed certificate
 * Secret (`<name>-webhook-certs`) by name — `create` cannot be limited by name, since the
 * name is not known when a create is authorized — and the webhooks' own rules, without
 * duplicates.
 */
function webhookRoleRules(name: string, extra: readonly PolicyRule[]): PolicyRule[] {
  const rules: PolicyRule[] = [
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    {
      apiGroups: [""],
      resources: ["secrets"],
      resourceNames: [`${name}-webhook-certs`],
      verbs: ["get", "update", "patch"],
    },
  ];
  const seen = new Set(rules.map((r) => JSON.stringify(r)));
  for (const r of extra) {
    const key = JSON.stringify(r);
    if (!seen.has(key)) rules.push(structuredClone(r) as PolicyRule);
    seen.add(key);
  }
  return rules;
}

function rank(kind: string | undefined): number {
  const i = APPLY_ORDER.indexOf(kind ?? "");
  return i < 0 ? APPLY_ORDER.length : i;
}

const role = (metadata: KubeObject["metadata"], rules: PolicyRule[]) =>
  roleObject("Role", metadata, rules);
const binding = bindingObject;

function deployment(
  init: OperatorManifestsInit,
  metadata: KubeObject["metadata"],
  watch: string[],
  hasWebhooks: boolean,
  ports: { metrics: number; health: number; webhook: number },
): KubeObject {
  const selector = { "app.kubernetes.io/name": init.name };
  const args = [
    "run",
    ...(init.sharding ? [] : ["--leader-elect"]),
    `--metrics-bind-address=:${ports.metrics}`,
    `--health-probe-bind-address=:${ports.health}`,
    `--graceful-shutdown-timeout=${GRACEFUL_SHUTDOWN_MS / 1_000}s`,
    ...(watch.length ? [`--watch-namespace=${watch.join(",")}`] : []),
    ...(hasWebhooks ? [`--webhook-port=${ports.webhook}`] : []),
  ];
  const probe = (path: string, initialDelaySeconds: number) => ({
    httpGet: { path, port: "health" },
    initialDelaySeconds,
    periodSeconds: 10,
  });
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata,
    spec: {
      replicas: init.sharding?.replicas ?? 1,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: { ...metadata.labels } },
        spec: {
          serviceAccountName: init.name,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          terminationGracePeriodSeconds: terminationGracePeriodSeconds(
            GRACEFUL_SHUTDOWN_MS,
            init.renewDeadlineMs ?? 10_000,
          ),
          volumes: [{ name: "tmp", emptyDir: { sizeLimit: "16Mi" } }],
          containers: [{
            name: "operator",
            image: init.image,
            args,
            env: [
              {
                name: "POD_NAMESPACE",
                valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
              },
              ...(init.sharding
                ? [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }]
                : []),
              // The heap budget of the limit below; change both together (`run` warns when
              // the heap is larger than the limit allows).
              { name: "DENO_V8_FLAGS", value: v8FlagsForLimit(DEFAULT_MEMORY_LIMIT) },
              // Large native buffers go back to the system when freed (src/util/memory_limit.ts).
              { ...MALLOC_ENV },
            ],
            ports: [
              { name: "metrics", containerPort: ports.metrics, protocol: "TCP" },
              { name: "health", containerPort: ports.health, protocol: "TCP" },
              ...(hasWebhooks
                ? [{ name: "webhook", containerPort: ports.webhook, protocol: "TCP" }]
                : []),
            ],
            // The root filesystem is read-only; the webhook server's Unix socket lives in /tmp.
            volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
            livenessProbe: probe("/healthz", 15),
            readinessProbe: probe("/readyz", 5),
            resources: {
              requests: { cpu: "10m", memory: DEFAULT_MEMORY_REQUEST },
              limits: { memory: DEFAULT_MEMORY_LIMIT },
            },
            securityContext: {
              runAsNonRoot: true,
              readOnlyRootFilesystem: true,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
              seccompProfile: { type: "RuntimeDefault" },
            },
          }],
        },
      },
    },
  } as KubeObject;
}

/** Webhook configurations with the same kind and name become one, their webhooks concatenated. */
function mergeConfigurations(objects: KubeObject[]): KubeObject[] {
  const out: KubeObject[] = [];
  const byKey = new Map<string, KubeObject & { webhooks?: unknown[] }>();
  for (const o of objects) {
    const key = `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
    const seen = byKey.get(key);
    const hooks = (o as { webhooks?: unknown[] }).webhooks;
    if (seen && Array.isArray(hooks)) {
      seen.webhooks = [...(seen.webhooks ?? []), ...structuredClone(hooks)];
      continue;
    }
    const copy = structuredClone(o) as KubeObject & { webhooks?: unknown[] };
    byKey.set(key, copy);
    out.push(copy);
  }
  return out;
}
