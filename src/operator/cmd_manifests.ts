/**
 * `manifests`: prints everything needed to deploy the operator as multi-document YAML, or with
 * `--out DIR` writes it as one file per group (`crds.yaml`, `operator.yaml`, `rbac.yaml`,
 * `webhooks.yaml`), or with `--helm DIR` as a Helm chart (`deploy/helm_chart.ts`) whose
 * default values render the same objects. Generated from the definitions compiled into the
 * program; nothing is read from disk or the cluster.
 *
 * @module
 */
import { EXIT, parseList, UsageError } from "../util/args.ts";
import { type Command, type CommandContext, env, operatorNamespace } from "./command/command.ts";
import { operatorManifests } from "../deploy/manifests.ts";
import { helmChart } from "../deploy/helm_chart.ts";
import { grafanaDashboard } from "../deploy/grafana_dashboard.ts";
import { toYaml } from "../util/yaml.ts";
import { fleetManifests } from "../deploy/fleet_manifests.ts";
import type { KubeObject } from "../core/object.ts";

/** The `manifests` command. */
export const manifestsCommand: Command = {
  name: "manifests",
  summary: "Print the YAML that deploys the operator (CRDs, RBAC, Deployment)",
  description:
    `Prints the operator's CRDs, Namespace, ServiceAccount, least-privilege RBAC derived from what
its controllers watch, own and write, its Deployment and, when it serves webhooks, their
Service and configurations, as multi-document YAML ready for "kubectl apply -f -". With
--out DIR, writes crds.yaml, operator.yaml, rbac.yaml (and webhooks.yaml) instead; for a
fleet operator, hub.yaml and member.yaml (the two sets below), member-crds.yaml (the CRDs
for every member) and hub-crds.yaml (those of its hubReads kinds, when any). With
--watch-namespace, namespaced permissions are Roles in those namespaces instead of a
ClusterRole, and the Deployment passes the same flag to "run".

With --helm DIR, writes a Helm chart instead: Chart.yaml, values.yaml (image, replicas,
leader election, resources, watch namespaces, metrics, webhook certificates, scheduling and
security contexts), the CRDs under crds/ and templates for the rest. With its default values
the chart renders the objects printed here, without the Namespace (helm install
--create-namespace makes it). --image and --watch-namespace set the values' defaults.

With --service-monitor, adds a ServiceMonitor (Prometheus Operator) that scrapes /metrics
over HTTPS with its service-account token; bind <name>-metrics-reader to Prometheus.

With --grafana, prints a Grafana dashboard (JSON, for Grafana's import) of the operator's
metrics instead: reconcile rate, errors and duration per controller, work-queue depth per
priority and latency, cache sizes, webhook latency, leader election and shard ownership.`,
  flags: [
    { name: "out", type: "string", valueName: "DIR", description: "Write one file per group" },
    {
      name: "helm",
      type: "string",
      valueName: "DIR",
      description: "Write a Helm chart of the operator into DIR",
    },
    {
      name: "service-monitor",
      type: "boolean",
      description: "Add a ServiceMonitor for the Prometheus Operator (monitoring.coreos.com/v1)",
    },
    {
      name: "member",
      type: "boolean",
      description: "A fleet operator: print the set to apply on every member cluster",
    },
    {
      name: "grafana",
      type: "boolean",
      description: "Print a Grafana dashboard (JSON) of the operator's metrics instead",
    },
    {
      name: "chart-version",
      type: "string",
      valueName: "SEMVER",
      description: "Version of the Helm chart (default: the operator's version)",
    },
    {
      name: "image",
      type: "string",
      valueName: "IMAGE",
      description: "Container image of the Deployment (default: <name>:<version>)",
    },
    {
      name: "watch-namespace",
      type: "string",
      valueName: "NS[,NS]",
      description:
        "Scope RBAC and the operator to these namespaces (default: WATCH_NAMESPACE, all)",
    },
  ],
  async run(ctx: CommandContext): Promise<number> {
    if (ctx.flags.grafana === true) {
      if (typeof ctx.flags.out === "string" || typeof ctx.flags.helm === "string") {
        throw new UsageError('Flag "--grafana" prints the dashboard: drop "--out" and "--helm"');
      }
      ctx.out(JSON.stringify(grafanaDashboard({ name: ctx.def.name }), null, 2));
      return EXIT.ok;
    }
    const image = typeof ctx.flags.image === "string" ? ctx.flags.image : ctx.def.image;
    const watch = parseList(
      typeof ctx.flags["watch-namespace"] === "string"
        ? ctx.flags["watch-namespace"]
        : env("WATCH_NAMESPACE"),
    );
    const init = {
      name: ctx.def.name,
      version: ctx.def.version,
      controllers: ctx.def.controllers,
      crds: ctx.def.installs.map((i) => i.crd),
      namespace: operatorNamespace(ctx),
      image,
      watchNamespaces: watch,
      webhooks: ctx.def.webhooks,
      rules: ctx.def.rules,
      renewDeadlineMs: ctx.def.sharding?.renewDeadlineMs ?? ctx.def.leaderElection.renewDeadlineMs,
      serviceMonitor: ctx.flags["service-monitor"] === true,
      ...(ctx.def.sharding ? { sharding: { replicas: ctx.def.sharding.replicas } } : {}),
    };
    const fleet = ctx.def.fleet;
    if (ctx.flags.member === true && !fleet) {
      throw new UsageError('Flag "--member" needs a fleet operator: operator({ fleet })');
    }
    if (fleet) {
      if (typeof ctx.flags.helm === "string") {
        throw new UsageError(
          'Flag "--helm" is not for a fleet operator: use "--out DIR" (hub.yaml, member.yaml and the CRDs)',
        );
      }
      if (typeof ctx.flags.out === "string" && ctx.flags.member === true) {
        throw new UsageError(
          'Flags "--out" and "--member" cannot be combined: "--out" writes both sets',
        );
      }
      const m = operatorManifests(init);
      const sets = fleetManifests({
        name: ctx.def.name,
        namespace: init.namespace,
        controllers: ctx.def.controllers,
        hubRules: fleet.clusters.hubRules,
        hubReads: fleet.hubReads,
        hubNamespace: fleet.hubNamespace,
        ...(ctx.def.sharding ? { leases: ctx.def.sharding.namespace ?? init.namespace } : {}),
      });
      const of = (kind: string) => m.operator.filter((o) => o.kind === kind);
      const hubSet = [...of("Namespace"), ...sets.hub, ...of("Deployment")];
      const out = ctx.flags.out;
      if (typeof out !== "string") {
        ctx.out(toYaml(ctx.flags.member === true ? sets.member : hubSet).trimEnd());
        return EXIT.ok;
      }
      // The primaries' CRDs belong on every member; those of `hubReads` kinds on the hub too
      // (what `install` applies where).
      const onHub = (crd: KubeObject) =>
        (fleet.hubReads ?? []).some((r) => crd.metadata.name === `${r.plural}.${r.group}`);
      await writeSets(ctx, out, {
        "hub.yaml": hubSet,
        "hub-crds.yaml": m.crds.filter(onHub),
        "member.yaml": sets.member,
        "member-crds.yaml": m.crds,
      });
      return EXIT.ok;
    }
    if (typeof ctx.flags.helm === "string") {
      if (typeof ctx.flags.out === "string") {
        throw new UsageError('Flags "--out" and "--helm" cannot be combined: pick one');
      }
      const chartVersion = ctx.flags["chart-version"];
      let files: Record<string, string>;
      try {
        files = helmChart({
          ...init,
          chartVersion: typeof chartVersion === "string" ? chartVersion : undefined,
        });
      } catch (err) {
        if (err instanceof TypeError) throw new UsageError(err.message);
        throw err;
      }
      await writeFiles(ctx, ctx.flags.helm, files);
      return EXIT.ok;
    }
    const m = operatorManifests(init);
    const out = ctx.flags.out;
    if (typeof out !== "string") {
      ctx.out(toYaml(m.all).trimEnd());
      return EXIT.ok;
    }
    await writeSets(ctx, out, {
      "crds.yaml": m.crds,
      "operator.yaml": m.operator,
      "rbac.yaml": m.rbac,
      "webhooks.yaml": m.webhooks,
    });
    return EXIT.ok;
  },
};

/** Writes each non-empty set as one YAML file in `out`, one line per file. */
async function writeSets(
  ctx: CommandContext,
  out: string,
  files: Record<string, KubeObject[]>,
): Promise<void> {
  await ensureDir(out, "out", "manifests");
  for (const [file, objects] of Object.entries(files)) {
    if (!objects.length) continue;
    const path = `${out.replace(/\/+$/, "")}/${file}`;
    await Deno.writeTextFile(path, toYaml(objects));
    ctx.out(`${path} written (${objects.length} objects)`);
  }
}

/** Creates the output folder; a file in its place is a usage error. */
async function ensureDir(dir: string, flag: string, what: string): Promise<void> {
  const info = await Deno.stat(dir).catch(() => undefined);
  if (info && !info.isDirectory) {
    throw new UsageError(`Flag "--${flag}" takes a directory, and "${dir}" is a file`);
  }
  try {
    await Deno.mkdir(dir, { recursive: true });
  } catch (err) {
    // Keep the runtime's error class (PermissionDenied, ...); say what was being done.
    if (err instanceof Error) err.message = `Cannot write ${what} to "${dir}": ${err.message}`;
    throw err;
  }
}

/** Writes a chart's files below `dir`, one line per file. */
async function writeFiles(
  ctx: CommandContext,
  dir: string,
  files: Record<string, string>,
): Promise<void> {
  await ensureDir(dir, "helm", "the Helm chart");
  const root = dir.replace(/\/+$/, "");
  for (const [path, text] of Object.entries(files)) {
    const full = `${root}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(full, text);
  }
  ctx.out(`Helm chart ${ctx.def.name} written to ${root} (${Object.keys(files).length} files)`);
}
