// What every subcommand of an operator program gets: the operator's resolved definition, the
// parsed flags, output streams and a way to connect. Subcommands live in `cmd_*.ts`.
import type { CommandIo } from "../../util/cli_io.ts";
import { type Client, type ClientOptions, createClient } from "../../client/client.ts";
import type { Flags, FlagSpec } from "../../util/args.ts";
import type { PolicyRule } from "../../core/kinds_cluster.ts";
import type { KubeObject } from "../../core/object.ts";
import { groupOf } from "../../core/api_version.ts";
import type { OperatorFleetOptions, OperatorShardingOptions } from "./options.ts";
import type { OperatorWebhook } from "../../webhook/manifests.ts";
import type { Controller } from "../../runtime/controller/reconcile.ts";
import type { Resource } from "../../core/resource.ts";
import type { ConvertibleResource } from "../../webhook/conversion.ts";

/** A custom resource the operator installs: the kind and its CRD. */
export interface InstalledResource {
  /** The kind. */
  resource: Resource;
  /** Its CustomResourceDefinition, named `<plural>.<group>`. */
  crd: KubeObject & { metadata: { name: string } };
}

/** `operator()`'s options, checked and with defaults applied. */
export interface OperatorDefinition {
  /** The operator's name. */
  name: string;
  /** The operator's version. */
  version: string;
  /** The controllers. */
  controllers: readonly Controller<any>[];
  /** Custom resources to install, de-duplicated by CRD name. */
  installs: readonly InstalledResource[];
  /** Admission webhooks. */
  webhooks: readonly OperatorWebhook[];
  /**
   * Multi-version resources among `installs` (`defineResource({ versions })`): the operator
   * serves their conversion webhook.
   */
  conversions: readonly ConvertibleResource[];
  /** Image of the generated Deployment. */
  image: string;
  /** The `namespace` option, if set. */
  namespace?: string;
  /** Leader election. */
  leaderElection: {
    enabled: boolean;
    leaseName: string;
    namespace?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** Sharding, when the operator shards its objects instead of electing a leader. */
  sharding?: OperatorShardingOptions & { replicas: number };
  /** Extra RBAC rules. */
  rules: readonly PolicyRule[];
  /** Namespaces watched when no flag or environment variable says otherwise. */
  watchNamespaces: readonly string[];
  /** The fleet, when the controllers run on member clusters. */
  fleet?: OperatorFleetOptions;
}

/** What a command runs with. */
export interface CommandContext extends CommandIo {
  /** The operator. */
  def: OperatorDefinition;
  /** Global and command flags. */
  flags: Flags;
  /** Positional arguments after the command. */
  positionals: string[];
  /**
   * Ends the process at once with `code`, skipping every cleanup: only the program's entry
   * (`operator().main()`) can, and only `run` does, on a second stopping signal. Absent when
   * the entry cannot end the process (tests): then nothing happens.
   */
  exit?: (code: number) => void;
}

/** A subcommand of an operator program. */
export interface Command {
  /** Its name, e.g. `install`. */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Longer help: what it does, guarantees, environment. */
  description: string;
  /** Its flags, besides the global ones. */
  flags: readonly FlagSpec[];
  /**
   * Runs it.
   * @param ctx The operator, flags and output.
   * @returns The exit code.
   */
  run(ctx: CommandContext): Promise<number>;
}

/**
 * The operator's namespace: `--namespace`, then the `namespace` option, then `POD_NAMESPACE`,
 * then `<name>-system`.
 *
 * @param ctx The command context.
 * @returns The namespace.
 */
export function operatorNamespace(ctx: Pick<CommandContext, "def" | "flags">): string {
  const flag = ctx.flags.namespace;
  if (typeof flag === "string" && flag) return flag;
  return ctx.def.namespace ?? env("POD_NAMESPACE") ?? `${ctx.def.name}-system`;
}

/**
 * Reads an environment variable; absent when unset, empty or not permitted.
 *
 * @param name The variable.
 * @returns Its value.
 */
export function env(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Creates a client from `--kubeconfig` and `--context`, writing as the operator's field
 * manager.
 *
 * @param ctx The command context.
 * @param options Further client options, e.g. `onRequest`.
 * @returns The client; close it when done.
 */
export function connect(
  ctx: Pick<CommandContext, "def" | "flags">,
  options: Pick<ClientOptions, "onRequest"> = {},
): Promise<Client> {
  const str = (v: unknown) => typeof v === "string" ? v : undefined;
  return createClient({
    kubeconfig: str(ctx.flags.kubeconfig),
    context: str(ctx.flags.context),
    fieldManager: ctx.def.name,
    userAgent: `${ctx.def.name}/${ctx.def.version} kubeno`,
    ...options,
  });
}

/**
 * `kubectl`'s way of naming an object in output: `<plural>.<group>/<name>`, e.g.
 * `customresourcedefinition.apiextensions.k8s.io/myapps.apps.kubeno.dev`.
 *
 * @param obj The object.
 * @returns Its printable name.
 */
export function objectLabel(obj: KubeObject): string {
  const group = groupOf(obj.apiVersion ?? "");
  return `${(obj.kind ?? "").toLowerCase()}${group ? `.${group}` : ""}/${obj.metadata.name}`;
}
