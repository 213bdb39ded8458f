/**
 * `operator({...}).main()`: the command line of every kubeno operator. It parses arguments
 * and dispatches to a subcommand (each in its own `cmd_*.ts`):
 *
 * - `run` (the default): start the controllers until SIGINT/SIGTERM, then stop gracefully;
 * - `install` / `uninstall`: apply / delete the operator's CRDs (and webhook configurations);
 * - `manifests`: print the YAML that deploys the operator (CRDs, RBAC, Deployment);
 * - `version`, `help` (also `--help`, `-h`, `<command> --help`).
 *
 * Global flags: `--kubeconfig`, `--context`, `--namespace` (the operator's namespace),
 * `--log-level debug|info|warning|error`, `--log-format json|pretty`.
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error. Failures are one line on stderr naming
 * what was wrong and what to do; only unexpected errors add a stack, and only with
 * `--log-level debug`.
 *
 * Everything is generated from the definitions compiled into the program — no manifest file
 * is read at run time — so a `deno compile`d operator carries its own CRDs and RBAC.
 *
 * @module
 */
import { describeError } from "./_cli_errors.ts";
import {
  EXIT,
  type FlagSpec,
  formatFlags,
  GLOBAL_FLAGS,
  parseFlags,
  splitCommand,
  UsageError,
} from "./_cli_args.ts";
import type { Command, CommandIo, InstalledResource, OperatorDefinition } from "./_cli_command.ts";
import { installCommand } from "./cmd_install.ts";
import { manifestsCommand } from "./cmd_manifests.ts";
import { runCommand } from "./cmd_run.ts";
import { uninstallCommand } from "./cmd_uninstall.ts";
import { configureLogging } from "./log.ts";
import type { OperatorOptions } from "./operator_types.ts";
import type { Resource } from "./resource.ts";

export type {
  LeaderElectionOptions,
  OperatorController,
  OperatorOptions,
  OperatorWebhook,
  WebhookManifestContext,
} from "./operator_types.ts";

/** An operator program: its command line. */
export interface Operator {
  /** The operator's name. */
  readonly name: string;
  /** The operator's version. */
  readonly version: string;
  /**
   * Runs the command line and returns its exit code, which it also sets as `Deno.exitCode`:
   * `await operator({...}).main()` as the last statement makes the process exit with it. It
   * never calls `Deno.exit` itself, so it can be called from tests; see `mainAndExit`.
   *
   * @param args The arguments, without the program name.
   * @returns 0 ok, 1 runtime failure, 2 usage error.
   */
  main(args?: readonly string[]): Promise<number>;
  /**
   * Runs `main` and exits the process with its code, even if something still holds the
   * event loop open.
   *
   * @param args The arguments, without the program name.
   * @returns Never.
   */
  mainAndExit(args?: readonly string[]): Promise<never>;
}

const COMMANDS: readonly Command[] = [
  runCommand,
  installCommand,
  uninstallCommand,
  manifestsCommand,
];
const VALUE_FLAGS = new Set(
  [...GLOBAL_FLAGS, ...COMMANDS.flatMap((c) => c.flags)]
    .filter((f) => f.type === "string").map((f) => f.name),
);
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * Describes an operator program from its controllers. `run` starts the controllers;
 * `install` and `manifests` are generated from the controllers' resources (custom resources
 * made with `defineResource` carry their CRD) and from `resources`.
 *
 * @param options Name, controllers, and optionally version, extra resources, webhooks,
 * image, namespace, leader election and extra RBAC rules.
 * @returns The operator; call `main()`.
 * @throws {TypeError} When `name` is not a DNS label, two controllers share a name, or two
 * different resources have the same CRD name.
 *
 * @example An operator's entry point
 * ```ts ignore
 * import { defineResource, operator, reconcile, z } from "jsr:@kubeno/kubeno";
 * const Widget = defineResource({
 *   group: "example.com", version: "v1", kind: "Widget",
 *   spec: z.object({ size: z.int() }),
 * });
 * const controller = reconcile(Widget, { reconcile(w, ctx) { ctx.log.info("saw {key}", { key: ctx.key }); } });
 * if (import.meta.main) await operator({ name: "widget-operator", controllers: [controller] }).main();
 * ```
 *
 * @example Print the version without a cluster
 * ```ts
 * import { operator } from "./operator.ts";
 * const op = operator({ name: "widget-operator", version: "1.2.3", controllers: [] });
 * const code = await op.main(["version"]);
 * if (code !== 0 || op.version !== "1.2.3") throw new Error();
 * ```
 */
export function operator(options: OperatorOptions): Operator {
  const def = define(options);
  const main = async (args: readonly string[] = Deno.args) => {
    const code = await dispatch(def, args, consoleIo);
    Deno.exitCode = code;
    return code;
  };
  return Object.freeze({
    name: def.name,
    version: def.version,
    main,
    async mainAndExit(args?: readonly string[]): Promise<never> {
      Deno.exit(await main(args));
    },
  });
}

const consoleIo: CommandIo = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/**
 * Parses `args` and runs the command, reporting failures on `io.err`.
 *
 * @param def The operator.
 * @param args The arguments.
 * @param io Where to write.
 * @returns The exit code.
 */
export async function dispatch(
  def: OperatorDefinition,
  args: readonly string[],
  io: CommandIo,
): Promise<number> {
  let name: string | undefined;
  let debug = false;
  try {
    const split = splitCommand(args, VALUE_FLAGS);
    name = split.command ?? "run";
    if (name === "help") {
      const { flags, positionals } = parseFlags(split.rest, GLOBAL_FLAGS);
      void flags;
      const topic = positionals[0];
      if (topic && !COMMANDS.some((c) => c.name === topic)) {
        throw new UsageError(`Unknown command "${topic}"`);
      }
      io.out(topic ? commandHelp(def, findCommand(topic)!) : overview(def));
      return EXIT.ok;
    }
    if (name === "version" || (!split.command && split.rest.includes("--version"))) {
      io.out(`${def.name} ${def.version}`);
      return EXIT.ok;
    }
    const cmd = findCommand(name);
    if (!cmd) {
      const cmdName = name;
      name = undefined;
      throw new UsageError(`Unknown command "${cmdName}"`);
    }
    const { flags, positionals } = parseFlags(split.rest, [...GLOBAL_FLAGS, ...cmd.flags]);
    if (flags.help) {
      io.out(split.command ? commandHelp(def, cmd) : overview(def));
      return EXIT.ok;
    }
    if (positionals.length) throw new UsageError(`Unexpected argument "${positionals[0]}"`);
    debug = flags["log-level"] === "debug";
    await configureLogging({
      level: (flags["log-level"] as "debug" | "info" | "warning" | "error" | undefined) ?? "info",
      format: (flags["log-format"] as "json" | "pretty" | undefined) ?? "auto",
    });
    return await cmd.run({ def, flags, positionals, ...io });
  } catch (err) {
    if (err instanceof UsageError) {
      const help = name ? `${def.name} ${name} --help` : `${def.name} --help`;
      io.err(`${def.name}: ${err.message}; run "${help}" for usage`);
      return EXIT.usage;
    }
    const [first, ...rest] = describeError(err, debug);
    io.err(`${def.name}: ${first}`);
    for (const line of rest) io.err(line);
    return EXIT.failure;
  }
}

function findCommand(name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name);
}

function overview(def: OperatorDefinition): string {
  const rows = [
    ...COMMANDS.map((c) => [c.name, c.name === "run" ? `${c.summary} (default)` : c.summary]),
    ["version", "Print the version"],
    ["help", 'Show help; "help <command>" for a command\'s flags'],
  ];
  const width = Math.max(...rows.map(([n]) => n.length)) + 2;
  return `${def.name} ${def.version} — a Kubernetes operator built with kubeno

Usage: ${def.name} [command] [flags]

Commands:
${rows.map(([n, s]) => `  ${n.padEnd(width)}${s}`).join("\n")}

Global flags:
${formatFlags(GLOBAL_FLAGS)}

Exit codes: 0 ok, 1 failure, 2 usage error.
Run "${def.name} <command> --help" for a command's flags.`;
}

function commandHelp(def: OperatorDefinition, cmd: Command): string {
  const own = cmd.flags.length ? `\nFlags:\n${formatFlags(cmd.flags)}\n` : "";
  return `Usage: ${def.name} ${cmd.name} [flags]

${cmd.description}
${own}
Global flags:
${formatFlags(GLOBAL_FLAGS as FlagSpec[])}`;
}

function define(options: OperatorOptions): OperatorDefinition {
  const name = options.name;
  if (typeof name !== "string" || !DNS_LABEL.test(name)) {
    throw new TypeError(
      `Cannot define operator "${name}": the name must be a DNS label (lower-case letters, ` +
        `digits and "-", at most 63 characters)`,
    );
  }
  const seen = new Set<string>();
  for (const c of options.controllers) {
    if (seen.has(c.name)) {
      throw new TypeError(
        `Cannot define operator "${name}": two controllers are named "${c.name}"`,
      );
    }
    seen.add(c.name);
  }
  const installs = new Map<string, InstalledResource & { json: string }>();
  const candidates: Resource[] = [
    ...options.controllers.map((c) => c.resource),
    ...(options.resources ?? []),
  ];
  for (const res of candidates) {
    const make = (res as { crd?: () => InstalledResource["crd"] }).crd;
    if (typeof make !== "function") continue;
    const crd = make.call(res);
    const json = JSON.stringify(crd);
    const prev = installs.get(crd.metadata.name);
    if (prev && prev.json !== json) {
      throw new TypeError(
        `Cannot define operator "${name}": two different definitions of CRD "${crd.metadata.name}"`,
      );
    }
    if (!prev) installs.set(crd.metadata.name, { resource: res, crd, json });
  }
  const version = options.version ?? "0.0.0";
  const le = options.leaderElection;
  const leOptions = typeof le === "object" ? le : {};
  return {
    name,
    version,
    controllers: [...options.controllers],
    installs: [...installs.values()].map(({ resource, crd }) => ({ resource, crd })),
    webhooks: [...(options.webhooks ?? [])],
    image: options.image ?? `${name}:${version}`,
    namespace: options.namespace,
    leaderElection: {
      enabled: le === true || (typeof le === "object" && (le.enabled ?? false)),
      leaseName: leOptions.leaseName ?? name,
      namespace: leOptions.namespace,
    },
    rules: [...(options.rules ?? [])],
  };
}
