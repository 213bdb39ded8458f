/**
 * `manifests`: prints everything needed to deploy the operator as multi-document YAML, or with
 * `--out DIR` writes it as one file per group (`crds.yaml`, `operator.yaml`, `rbac.yaml`,
 * `webhooks.yaml`). Generated from the definitions compiled into the program; nothing is read
 * from disk or the cluster.
 *
 * @module
 */
import { EXIT, parseList, UsageError } from "../util/args.ts";
import { type Command, type CommandContext, env, operatorNamespace } from "./_command.ts";
import { operatorManifests } from "../deploy/manifests.ts";
import { toYaml } from "../util/yaml.ts";

/** The `manifests` command. */
export const manifestsCommand: Command = {
  name: "manifests",
  summary: "Print the YAML that deploys the operator (CRDs, RBAC, Deployment)",
  description:
    `Prints the operator's CRDs, Namespace, ServiceAccount, least-privilege RBAC derived from what
its controllers watch, own and write, its Deployment and, when it serves webhooks, their
Service and configurations, as multi-document YAML ready for "kubectl apply -f -". With
--out DIR, writes crds.yaml, operator.yaml, rbac.yaml (and webhooks.yaml) instead. With
--watch-namespace, namespaced permissions are Roles in those namespaces instead of a
ClusterRole, and the Deployment passes the same flag to "run".`,
  flags: [
    { name: "out", type: "string", valueName: "DIR", description: "Write one file per group" },
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
    const image = typeof ctx.flags.image === "string" ? ctx.flags.image : ctx.def.image;
    const watch = parseList(
      typeof ctx.flags["watch-namespace"] === "string"
        ? ctx.flags["watch-namespace"]
        : env("WATCH_NAMESPACE"),
    );
    const m = operatorManifests({
      name: ctx.def.name,
      version: ctx.def.version,
      controllers: ctx.def.controllers,
      crds: ctx.def.installs.map((i) => i.crd),
      namespace: operatorNamespace(ctx),
      image,
      watchNamespaces: watch,
      webhooks: ctx.def.webhooks,
      rules: ctx.def.rules,
      renewDeadlineMs: ctx.def.leaderElection.renewDeadlineMs,
    });
    const out = ctx.flags.out;
    if (typeof out !== "string") {
      ctx.out(toYaml(m.all).trimEnd());
      return EXIT.ok;
    }
    const info = await Deno.stat(out).catch(() => undefined);
    if (info && !info.isDirectory) {
      throw new UsageError(`Flag "--out" takes a directory, and "${out}" is a file`);
    }
    try {
      await Deno.mkdir(out, { recursive: true });
    } catch (err) {
      // Keep the runtime's error class (PermissionDenied, ...); say what was being done.
      if (err instanceof Error) err.message = `Cannot write manifests to "${out}": ${err.message}`;
      throw err;
    }
    const files = {
      "crds.yaml": m.crds,
      "operator.yaml": m.operator,
      "rbac.yaml": m.rbac,
      "webhooks.yaml": m.webhooks,
    };
    for (const [file, objects] of Object.entries(files)) {
      if (!objects.length) continue;
      const path = `${out.replace(/\/+$/, "")}/${file}`;
      await Deno.writeTextFile(path, toYaml(objects));
      ctx.out(`${path} written (${objects.length} objects)`);
    }
    return EXIT.ok;
  },
};
