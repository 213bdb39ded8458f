// Parsing and dispatch of an operator program's command line, and its help texts. The public
// entry is `operator()` in operator.ts; this file holds the parts tested in-process.
import { isDnsLabel } from "../util/names.ts";
import { describeError } from "./_errors.ts";
import {
  EXIT,
  type FlagSpec,
  formatFlags,
  GLOBAL_FLAGS,
  parseFlags,
  splitCommand,
  UsageError,
} from "../util/args.ts";
import type { Command, InstalledResource, OperatorDefinition } from "./command/command.ts";
import type { CommandIo } from "../util/cli_io.ts";
import { installCommand } from "./cmd_install.ts";
import { manifestsCommand } from "./cmd_manifests.ts";
import { migrateStorageCommand } from "./cmd_migrate_storage.ts";
import { runCommand } from "./run/cmd_run.ts";
import { uninstallCommand } from "./cmd_uninstall.ts";
import { configureLogging } from "../util/log.ts";
import type {
  LeaderElectionOptions,
  OperatorOptions,
  OperatorShardingOptions,
} from "./command/options.ts";
import type { Resource } from "../core/resource.ts";
import { APPLYSET_PARENT_TYPE_LABEL } from "../core/applyset.ts";
import { withRetryDefaults } from "../runtime/controller/retry.ts";
import type { KubeObject } from "../core/object.ts";
import type { ConvertibleResource } from "../webhook/conversion.ts";
import { type Admission, admission } from "../webhook/admission.ts";
import type { OperatorWebhook } from "../webhook/manifests.ts";

const COMMANDS: readonly Command[] = [
  runCommand,
  installCommand,
  uninstallCommand,
  manifestsCommand,
  migrateStorageCommand,
];
const VALUE_FLAGS = new Set(
  [...GLOBAL_FLAGS, ...COMMANDS.flatMap((c) => c.flags)]
    .filter((f) => f.type === "string").map((f) => f.name),
);

/**
 * Parses `args` and runs the command, reporting failures on `io.err`.
 *
 * @param def The operator.
 * @param args The arguments.
 * @param io Where to write.
 * @param exit Ends the process at once (see `CommandContext.exit`); only the program's entry
 * passes it.
 * @returns The exit code.
 */
export async function dispatch(
  def: OperatorDefinition,
  args: readonly string[],
  io: CommandIo,
  exit?: (code: number) => void,
): Promise<number> {
  let name: string | undefined;
  let debug = false;
  try {
    const split = splitCommand(args, VALUE_FLAGS);
    name = split.command ?? "run";
    if (name === "help") {
      name = undefined;
      const { positionals } = parseFlags(split.rest, GLOBAL_FLAGS);
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
    return await cmd.run({ def, flags, positionals, ...io, ...(exit ? { exit } : {}) });
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

/**
 * Checks `operator()`'s options and applies defaults.
 *
 * @param options The options.
 * @returns The definition the commands work with.
 * @throws {TypeError} See `operator()`.
 */
export function defineOperator(options: OperatorOptions): OperatorDefinition {
  const name = options.name;
  if (typeof name !== "string" || !isDnsLabel(name)) {
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
    // A spoke version's own resource (a controller may reconcile it) is part of its hub's CRD.
    if (prev && coversVersions(prev.crd, crd)) continue;
    if (prev && coversVersions(crd, prev.crd)) {
      installs.set(crd.metadata.name, { resource: res, crd, json });
      continue;
    }
    if (prev && prev.json !== json) {
      throw new TypeError(
        `Cannot define operator "${name}": two different definitions of CRD "${crd.metadata.name}"`,
      );
    }
    if (!prev) installs.set(crd.metadata.name, { resource: res, crd, json });
  }
  // Primaries with dependents are ApplySet parents; kubectl accepts a custom resource parent
  // only when its CRD says so.
  for (const c of options.controllers) {
    if (!c.applySetParent) continue;
    const make = (c.resource as { crd?: () => InstalledResource["crd"] }).crd;
    const install = make && installs.get(make.call(c.resource).metadata.name);
    if (!install) continue;
    const meta = install.crd.metadata as { labels?: Record<string, string> };
    install.crd = {
      ...install.crd,
      metadata: {
        ...install.crd.metadata,
        labels: { ...meta.labels, [APPLYSET_PARENT_TYPE_LABEL]: "true" },
      },
    };
  }
  const conversions = [...installs.values()].flatMap(({ resource, crd }) =>
    isConvertible(resource) &&
      (crd as { spec?: { conversion?: { strategy?: string } } }).spec?.conversion?.strategy ===
        "Webhook"
      ? [resource]
      : []
  );
  const webhooks: OperatorWebhook[] = [...(options.webhooks ?? [])];
  // A multi-version resource's validating webhook refuses objects that do not convert to every
  // served version (see admission()); one without an admission of its own gets one for that.
  for (const r of conversions) {
    const same = (w: OperatorWebhook) => {
      const res = (w as Partial<Admission>).resource;
      return res?.group === r.group && res.kind === r.kind && res.version === r.version;
    };
    if (!webhooks.some(same)) webhooks.push(admission(r, {}));
  }
  const version = options.version ?? "0.0.0";
  const le = options.leaderElection;
  const leOptions = typeof le === "object" ? le : {};
  return {
    name,
    version,
    controllers: options.controllers.map((c) =>
      withRetryDefaults(c, options.retry, `operator "${name}"`)
    ),
    installs: [...installs.values()].map(({ resource, crd }) => ({ resource, crd })),
    webhooks,
    conversions,
    image: options.image ?? `${name}:${version}`,
    namespace: options.namespace,
    leaderElection: {
      enabled: le === true || (typeof le === "object" && (le.enabled ?? false)),
      leaseName: leOptions.leaseName ?? name,
      namespace: leOptions.namespace,
      ...durations(name, leOptions),
    },
    ...(options.sharding ? { sharding: shardingOf(name, options) } : {}),
    rules: [...(options.rules ?? [])],
    watchNamespaces: (options.watchNamespaces ?? []).filter((ns) => ns !== ""),
    ...(options.fleet ? { fleet: fleetOf(name, options) } : {}),
  };
}

function shardingOf(
  name: string,
  options: OperatorOptions,
): OperatorShardingOptions & { replicas: number } {
  const le = options.leaderElection;
  if (le === true || (typeof le === "object" && le.enabled)) {
    throw new TypeError(
      `Cannot define operator "${name}": sharding and leaderElection exclude each other; replicas share the objects instead of electing a leader`,
    );
  }
  const o = typeof options.sharding === "object" ? options.sharding : {};
  const replicas = o.replicas ?? 3;
  if (!Number.isInteger(replicas) || replicas < 1) {
    throw new RangeError(
      `Cannot define operator "${name}": sharding.replicas must be a positive integer, got "${replicas}"`,
    );
  }
  return { ...o, replicas };
}

function fleetOf(name: string, options: OperatorOptions): NonNullable<OperatorOptions["fleet"]> {
  const f = options.fleet!;
  if (typeof f.clusters?.run !== "function") {
    throw new TypeError(
      `Cannot define operator "${name}": fleet.clusters must be a cluster provider, e.g. kubeconfigSecrets({ namespace })`,
    );
  }
  const le = options.leaderElection;
  if (le === true || (typeof le === "object" && le.enabled)) {
    throw new TypeError(
      `Cannot define operator "${name}": fleet excludes leaderElection; spread the members over replicas with sharding`,
    );
  }
  // With a fleet, `sharding` hands out whole members (one Lease per member), not objects.
  const sh = typeof options.sharding === "object" ? options.sharding : {};
  for (const field of ["shards", "key"] as const) {
    if (sh[field] !== undefined) {
      throw new TypeError(
        `Cannot define operator "${name}": sharding.${field} is not for a fleet (its replicas share whole members, one Lease each)`,
      );
    }
  }
  return f;
}

/** Whether `wide` is a multi-version CRD that declares every version of single-version `one`. */
function coversVersions(wide: KubeObject, one: KubeObject): boolean {
  const names = (c: KubeObject) =>
    ((c as { spec?: { versions?: { name: string }[] } }).spec?.versions ?? []).map((v) => v.name);
  const [w, o] = [names(wide), names(one)];
  return w.length > 1 && o.length === 1 && w.includes(o[0]);
}

function isConvertible(res: Resource): res is Resource & ConvertibleResource {
  const r = res as Partial<ConvertibleResource>;
  return typeof r.convert === "function" && (r.versions?.length ?? 0) > 1;
}

// Only the durations that were set, each checked here so a typo fails at startup.
function durations(name: string, o: LeaderElectionOptions): Partial<LeaderElectionOptions> {
  const out: Partial<LeaderElectionOptions> = {};
  for (const k of ["leaseDurationMs", "renewDeadlineMs", "retryPeriodMs"] as const) {
    const v = o[k];
    if (v === undefined) continue;
    if (!(typeof v === "number" && v > 0 && Number.isFinite(v))) {
      throw new RangeError(
        `Cannot define operator "${name}": leaderElection.${k} must be > 0, got "${v}"`,
      );
    }
    out[k] = v;
  }
  return out;
}
