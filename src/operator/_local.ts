// How `run` behaves outside a cluster (local development, tests): it must depend on nothing
// that `install` did not create. The operator's namespace (e.g. `myapp-operator-system`)
// exists only once the generated manifests are deployed, so a local run keeps its webhook
// certificate in memory and puts its Lease in a namespace that exists: `--namespace`, else
// POD_NAMESPACE, else the kubeconfig context's namespace (or `default`).
import type { Client } from "../client/client.ts";
import { type CommandContext, env, operatorNamespace } from "./_command.ts";
import type { RunningWebhooks } from "../webhook/webhooks.ts";

/** What of `run`'s settings a local run adjusts and describes (see `RunSettings`). */
export interface LocalRunSettings {
  /** The Lease, when electing a leader. */
  leaderElection?: { name: string; namespace: string };
  /** The webhook server's supplied certificate directory, if any. */
  webhook?: { certPath?: string };
}

/** Where and how `run` runs. */
export interface RunPlace {
  /** True outside a cluster: no `KUBERNETES_SERVICE_HOST`. */
  local: boolean;
  /** The operator's namespace for this run: its Lease and, in a cluster, its certificate Secret. */
  namespace: string;
}

/**
 * Decides where `run` runs and, outside a cluster, moves the Lease to a namespace that
 * exists unless `--leader-elect-namespace` names one.
 *
 * @param ctx The command context.
 * @param client The connected client (its context's namespace).
 * @param settings `run`'s settings; `leaderElection.namespace` is adjusted in place.
 * @returns Whether the run is local and its namespace.
 */
export function runPlace(
  ctx: Pick<CommandContext, "def" | "flags">,
  client: Pick<Client, "namespace">,
  settings: LocalRunSettings,
): RunPlace {
  const local = !env("KUBERNETES_SERVICE_HOST");
  if (!local) return { local, namespace: operatorNamespace(ctx) };
  const flag = typeof ctx.flags.namespace === "string" && ctx.flags.namespace
    ? ctx.flags.namespace
    : undefined;
  const namespace = flag ?? env("POD_NAMESPACE") ?? client.namespace;
  const le = settings.leaderElection;
  if (le && typeof ctx.flags["leader-elect-namespace"] !== "string") le.namespace = namespace;
  return { local, namespace };
}

/**
 * The one line a local run prints about what it did.
 *
 * @param place Where it runs.
 * @param settings Its settings.
 * @param webhooks Its webhooks, if it serves any.
 * @param server The API server's URL.
 * @returns The line.
 */
export function describeLocalRun(
  place: RunPlace,
  settings: LocalRunSettings,
  webhooks: RunningWebhooks | undefined,
  server: string,
): string {
  const parts = [`Running outside a cluster against ${server}`];
  if (webhooks) {
    const cert = settings.webhook?.certPath
      ? `the certificate in ${settings.webhook.certPath}`
      : "an in-memory certificate";
    parts.push(
      `webhooks served at https://127.0.0.1:${webhooks.server.port} with ${cert}, registered ` +
        "by URL until exit, when the previous registration is restored",
    );
  }
  const le = settings.leaderElection;
  parts.push(
    le
      ? `Lease "${le.namespace}/${le.name}"`
      : `namespace "${place.namespace}" (a Lease only with --leader-elect)`,
  );
  return parts.join("; ");
}
