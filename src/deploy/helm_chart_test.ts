import assert from "node:assert/strict";
import { helmChart, type HelmChartInit, splitImage } from "./helm_chart.ts";
import { resource } from "../core/resource.ts";
import { fromYaml } from "../util/yaml.ts";

const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
const base: HelmChartInit = {
  name: "widget-operator",
  version: "1.2.3",
  controllers: [{ name: "widget", resource: Widget, owns: [], watches: [] }],
  crds: [{
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
  }],
  namespace: "widget-system",
  image: "registry.example:5000/team/widget:1.2.3",
};

Deno.test("helmChart: Chart.yaml, values defaults, CRDs in crds/, templates", () => {
  const chart = helmChart(base);
  assert.deepEqual(Object.keys(chart).sort(), [
    "Chart.yaml",
    "README.md",
    "crds/widgets.example.com.yaml",
    "templates/NOTES.txt",
    "templates/_helpers.tpl",
    "templates/deployment.yaml",
    "templates/metrics-service.yaml",
    "templates/rbac.yaml",
    "templates/serviceaccount.yaml",
    "templates/servicemonitor.yaml",
    "values.schema.json",
    "values.yaml",
  ]);
  const meta = fromYaml(chart["Chart.yaml"])[0] as Record<string, unknown>;
  assert.equal(meta.apiVersion, "v2");
  assert.equal(meta.version, "1.2.3");
  assert.equal(meta.appVersion, "1.2.3");
  const values = fromYaml(chart["values.yaml"])[0] as any;
  // The tag equals the version: left to appVersion, so a new chart version moves the image.
  assert.deepEqual(values.image, {
    repository: "registry.example:5000/team/widget",
    tag: "",
    digest: "",
    pullPolicy: "",
    pullSecrets: [],
  });
  assert.equal(values.replicas, 1);
  assert.equal(values.leaderElection.enabled, true);
  assert.deepEqual(values.resources, {
    requests: { cpu: "10m", memory: "128Mi" },
    limits: { memory: "256Mi" },
  });
  assert.equal(values.v8Flags, "--max-old-space-size=144,--max-semi-space-size=4");
  assert.equal(values.webhook, undefined, "no webhook values without webhooks");
  assert.match(chart["README.md"], /`helm uninstall` leaves them/);
  assert.match(
    chart["templates/rbac.yaml"],
    /\{\{- range \$ns := \$\.Values\.watchNamespaces \}\}/,
  );
  JSON.parse(chart["values.schema.json"]);
});

Deno.test("helmChart: a chart version must be SemVer", () => {
  assert.throws(
    () => helmChart({ ...base, version: "dev" }),
    /Cannot write a Helm chart for "widget-operator": its version "dev" is not SemVer \(like 1\.2\.3\); set the operator's version or pass --chart-version/,
  );
  assert.equal(
    (fromYaml(
      helmChart({ ...base, version: "dev", chartVersion: "0.1.0-dev.1" })["Chart.yaml"],
    )[0] as any)
      .version,
    "0.1.0-dev.1",
  );
});

Deno.test("splitImage: registry ports, digests and missing tags", () => {
  assert.deepEqual(splitImage("registry.example:5000/team/widget:1.2.3"), {
    repository: "registry.example:5000/team/widget",
    tag: "1.2.3",
    digest: "",
  });
  assert.deepEqual(splitImage("registry.example:5000/widget"), {
    repository: "registry.example:5000/widget",
    tag: "",
    digest: "",
  });
  assert.deepEqual(splitImage("widget@sha256:abc"), {
    repository: "widget",
    tag: "",
    digest: "sha256:abc",
  });
});

Deno.test("helmChart: the ServiceMonitor is rendered only with metrics.serviceMonitor.enabled", () => {
  const chart = helmChart(base);
  const tpl = chart["templates/servicemonitor.yaml"];
  assert.match(
    tpl,
    /^\{\{- if and \$\.Values\.metrics\.enabled \$\.Values\.metrics\.serviceMonitor\.enabled \}\}\n/,
  );
  assert.match(tpl, /kind: ServiceMonitor/);
  const values = fromYaml(chart["values.yaml"])[0] as any;
  assert.equal(values.metrics.serviceMonitor.enabled, false);
});
