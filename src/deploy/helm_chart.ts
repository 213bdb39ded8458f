/**
 * A Helm chart of an operator, generated from the same definitions as `manifests`: the
 * templates are the very objects {@linkcode operatorManifests} builds, with the settings a
 * chart user expects made values. With the default values, `helm template` renders the
 * objects `manifests` prints (apart from the Namespace, which belongs to `helm install
 * --create-namespace`); a test keeps that true.
 *
 * Layout: `Chart.yaml`, `values.yaml` (with `values.schema.json`), `README.md`, the CRDs under
 * `crds/` (Helm installs them before the templates and never upgrades or deletes them), and
 * `templates/` for the ServiceAccount, RBAC, Deployment, Services, webhook configurations
 * and, with `webhook.certificates.mode: cert-manager`, an Issuer and a Certificate.
 *
 * Values: image (repository, tag — default the chart's appVersion —, digest, pullPolicy,
 * pullSecrets), replicas, leaderElection.enabled, resources, watchNamespaces (RBAC becomes
 * a Role per namespace), metrics (enabled, port), webhook.certificates (`self-managed`, a
 * supplied `secret`, or `cert-manager`), nodeSelector, tolerations, affinity,
 * podSecurityContext, securityContext, podAnnotations.
 *
 * @module
 */
import type { KubeObject } from "../core/object.ts";
import { toYaml } from "../util/yaml.ts";
import { operatorManifests, type OperatorManifestsInit } from "./manifests.ts";
import { TemplateBuilder, type TemplateDoc } from "./_helm_template.ts";
import { chartReadme, valuesSchema, valuesYaml } from "./_helm_files.ts";

/** Where supplied webhook certificates are mounted (controller-runtime's default path). */
export const WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

/** What {@linkcode helmChart} needs: what `manifests` needs, and the chart's version. */
export interface HelmChartInit extends OperatorManifestsInit {
  /**
   * The chart's version (SemVer 2).
   * @default the operator's `version`
   */
  chartVersion?: string;
  /** One line for `Chart.yaml`. @default `<name>, a Kubernetes operator built with kubeno` */
  description?: string;
}

/** A chart: file contents by path relative to the chart's folder. */
export type HelmChart = Record<string, string>;

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/** `repository`, `tag` and `digest` of an image reference. */
export function splitImage(image: string): { repository: string; tag: string; digest: string } {
  const at = image.indexOf("@");
  if (at >= 0) return { repository: image.slice(0, at), tag: "", digest: image.slice(at + 1) };
  const colon = image.lastIndexOf(":");
  return colon > image.lastIndexOf("/")
    ? { repository: image.slice(0, colon), tag: image.slice(colon + 1), digest: "" }
    : { repository: image, tag: "", digest: "" };
}

/**
 * Generates a Helm chart that deploys the operator.
 *
 * @param init The operator's definitions and deployment settings, as for `operatorManifests`;
 * `namespace` is only written into the CRDs' conversion webhook (the running operator points
 * it at the namespace it was installed into).
 * @returns The chart's files by path.
 * @throws {TypeError} When the chart version is not SemVer 2.
 *
 * @example A chart's files
 * ```ts
 * import { helmChart } from "./helm_chart.ts";
 * import { resource } from "../core/resource.ts";
 * const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * const chart = helmChart({
 *   name: "widget-operator",
 *   version: "1.0.0",
 *   controllers: [{ name: "widget", resource: Widget, owns: [], watches: [] }],
 *   crds: [],
 *   namespace: "widget-system",
 *   image: "ghcr.io/example/widget-operator:1.0.0",
 * });
 * if (!chart["Chart.yaml"].includes("appVersion: 1.0.0")) throw new Error(chart["Chart.yaml"]);
 * if (!chart["templates/deployment.yaml"].includes(".Values.replicas")) throw new Error();
 * ```
 */
export function helmChart(init: HelmChartInit): HelmChart {
  const { name } = init;
  const chartVersion = init.chartVersion ?? init.version;
  if (!SEMVER.test(chartVersion)) {
    throw new TypeError(
      `Cannot write a Helm chart for "${name}": its version "${chartVersion}" is not SemVer ` +
        `(like 1.2.3); set the operator's version or pass --chart-version`,
    );
  }
  const real = operatorManifests(init);
  const t = new TemplateBuilder();
  const ns = t.value("$.Release.Namespace");
  const watchNs = t.value("$ns");
  const image = t.value(`include "${name}.image" $ | quote`);
  const base = { ...init, namespace: ns, image };
  const all = operatorManifests({ ...base, watchNamespaces: [] });
  const scoped = operatorManifests({ ...base, watchNamespaces: [watchNs] });
  const serves = all.webhooks.length > 0;
  const self = `eq $.Values.webhook.certificates.mode "self-managed"`;
  const metricsOn = "$.Values.metrics.enabled";
  const kindName = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
  const isMetricsRbac = (o: KubeObject) =>
    [`${name}-metrics-auth`, `${name}-metrics-reader`].includes(o.metadata.name!);

  // RBAC: a ClusterRole for all namespaces, or a Role in each of watchNamespaces.
  const rbacDocs = (objs: KubeObject[]): TemplateDoc[] =>
    objs.flatMap((o): TemplateDoc[] => {
      if (isMetricsRbac(o)) return [{ object: o, when: metricsOn }];
      if (o.metadata.name !== `${name}-webhook`) return [{ object: o }];
      // Without self-managed certificates there is no Secret for the operator to write.
      const rules = (o as { rules?: { resources?: string[] }[] }).rules ?? [];
      const rest = rules.filter((r) => !r.resources?.includes("secrets"));
      return [
        { object: o, when: self },
        ...(rest.length ? [{ object: { ...o, rules: rest }, when: `not (${self})` }] : []),
      ];
    });
  const inWatched = (o: KubeObject) => o.metadata.namespace === watchNs;
  const rbac = [
    "{{- if $.Values.watchNamespaces }}\n",
    t.render(rbacDocs(scoped.rbac.filter((o) => !inWatched(o)))),
    t.render(
      rbacDocs(scoped.rbac.filter(inWatched)).map((d) => ({
        ...d,
        range: "$ns := $.Values.watchNamespaces",
      })),
    ),
    "{{- else }}\n",
    t.render(rbacDocs(all.rbac)),
    "{{- end }}\n",
  ].join("");

  const byKind = (kind: string) => all.operator.filter((o) => o.kind === kind);
  const metricsService = all.operator.find((o) => kindName(o) === `Service/${name}-metrics`)!;
  (metricsService as unknown as { spec: { ports: { port: unknown }[] } }).spec.ports[0].port = t
    .value(
      "$.Values.metrics.port",
    );

  const files: HelmChart = {
    "Chart.yaml": toYaml([{
      apiVersion: "v2",
      name,
      description: init.description ?? `${name}, a Kubernetes operator built with kubeno`,
      type: "application",
      version: chartVersion,
      appVersion: init.version,
      annotations: { "kubeno.dev/generated-by": "kubeno manifests --helm" },
    }]),
    "values.yaml": valuesYaml(
      { ...init, serves, deployment: real.operator.find((o) => o.kind === "Deployment") },
      splitImage(init.image),
    ),
    "values.schema.json": `${JSON.stringify(valuesSchema(serves), null, 2)}\n`,
    "README.md": chartReadme({ ...init, serves, crds: real.crds }),
    "templates/NOTES.txt": notes(name, serves),
    "templates/_helpers.tpl": helpers(name),
    "templates/serviceaccount.yaml": t.render(
      byKind("ServiceAccount").map((object) => ({ object })),
    ),
    "templates/rbac.yaml": rbac,
    "templates/deployment.yaml": t.render([{
      object: deployment(t, byKind("Deployment")[0], serves),
    }]),
    "templates/metrics-service.yaml": t.render([{ object: metricsService, when: metricsOn }]),
    "templates/servicemonitor.yaml": t.render([{
      object: operatorManifests({ ...base, watchNamespaces: [], serviceMonitor: true }).operator
        .find((o) => o.kind === "ServiceMonitor")!,
      when: `and ${metricsOn} $.Values.metrics.serviceMonitor.enabled`,
    }]),
  };
  if (serves) {
    files["templates/webhook.yaml"] = t.render(all.webhooks.map((object) => ({ object })));
    files["templates/certificate.yaml"] = t.render(
      certManager(t, name).map((object) => ({
        object,
        when: `eq $.Values.webhook.certificates.mode "cert-manager"`,
      })),
    );
  }
  // The CRDs as `manifests` writes them, conversion webhooks pointing at its namespace.
  for (const crd of real.crds) {
    files[`crds/${crd.metadata.name}.yaml`] = toYaml([crd]);
  }
  return files;
}

/** The Deployment with its settings made values. */
function deployment(t: TemplateBuilder, dep: KubeObject, serves: boolean): KubeObject {
  const d = structuredClone(dep) as any;
  const pod = d.spec.template.spec;
  const c = pod.containers[0];
  d.spec.replicas = t.value("$.Values.replicas");
  d.spec.template.metadata.annotations = t.optional("$.Values.podAnnotations");
  pod.securityContext = t.block("$.Values.podSecurityContext");
  pod.imagePullSecrets = t.optional("$.Values.image.pullSecrets");
  pod.nodeSelector = t.optional("$.Values.nodeSelector");
  pod.tolerations = t.optional("$.Values.tolerations");
  pod.affinity = t.optional("$.Values.affinity");
  c.imagePullPolicy = t.optionalScalar("$.Values.image.pullPolicy");
  c.resources = t.block("$.Values.resources");
  for (const e of c.env ?? []) {
    if (e.name === "DENO_V8_FLAGS") e.value = t.value("$.Values.v8Flags | quote");
  }
  c.securityContext = t.block("$.Values.securityContext");
  const args: unknown[] = [];
  for (const a of c.args as string[]) {
    if (a === "--leader-elect") args.push(t.item("$.Values.leaderElection.enabled", a));
    else if (a.startsWith("--metrics-bind-address=")) {
      args.push(
        t.item("$.Values.metrics.enabled", "--metrics-bind-address=:{{ $.Values.metrics.port }}"),
        t.item("not $.Values.metrics.enabled", "--metrics-bind-address=0"),
      );
    } else args.push(a);
    if (a.startsWith("--graceful-shutdown-timeout=")) {
      args.push(t.item(
        "$.Values.watchNamespaces",
        '--watch-namespace={{ join "," $.Values.watchNamespaces }}',
      ));
    }
  }
  for (const p of c.ports) {
    if (p.name === "metrics") p.containerPort = t.value("$.Values.metrics.port");
  }
  if (serves) {
    const supplied = `ne $.Values.webhook.certificates.mode "self-managed"`;
    args.push(t.item(supplied, `--webhook-cert-path=${WEBHOOK_CERT_DIR}`));
    pod.volumes.push(t.item(supplied, {
      name: "webhook-certs",
      secret: { secretName: t.value(`include "${d.metadata.name}.webhookSecret" $ | quote`) },
    }));
    c.volumeMounts.push(t.item(supplied, {
      name: "webhook-certs",
      mountPath: WEBHOOK_CERT_DIR,
      readOnly: true,
    }));
  }
  c.args = args;
  return d;
}

/** cert-manager's Issuer (unless one is named) and the Certificate of the webhook Service. */
function certManager(t: TemplateBuilder, name: string): KubeObject[] {
  const meta = (n: string) => ({
    name: n,
    namespace: t.value("$.Release.Namespace"),
    labels: { "app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "kubeno" },
  });
  const host = `${name}-webhook.{{ $.Release.Namespace }}.svc`;
  return [
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Issuer",
      metadata: meta(`${name}-selfsigned`),
      spec: { selfSigned: {} },
    } as KubeObject,
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: meta(`${name}-webhook`),
      spec: {
        secretName: t.value(`include "${name}.webhookSecret" $ | quote`),
        dnsNames: [host, `${host}.cluster.local`],
        issuerRef: t.block(
          `(default (dict "kind" "Issuer" "name" "${name}-selfsigned") $.Values.webhook.certificates.certManager.issuerRef)`,
        ),
      },
    } as KubeObject,
  ];
}

function helpers(name: string): string {
  return `{{/* The container image: repository@digest, or repository:tag (default: appVersion). */}}
{{- define "${name}.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The Secret holding supplied webhook certificates (tls.crt, tls.key, ca.crt). */}}
{{- define "${name}.webhookSecret" -}}
{{- .Values.webhook.certificates.secretName | default (printf "%s-webhook-tls" "${name}") -}}
{{- end -}}
`;
}

function notes(name: string, serves: boolean): string {
  return `${name} {{ .Chart.AppVersion }} is installed in namespace {{ .Release.Namespace }}.

  kubectl -n {{ .Release.Namespace }} rollout status deployment/${name}
${
    serves
      ? `
Webhook certificates: {{ .Values.webhook.certificates.mode }}.`
      : ""
  }
The CRDs (crds/ in this chart) stay when the release is uninstalled; "helm upgrade" does not
update them: apply a newer release's CRDs with "kubectl apply -f crds/" or the operator's
"install" command.
`;
}
