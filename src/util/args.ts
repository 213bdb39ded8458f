// Command-line parsing for operator programs: GNU-style long flags (`--flag value`,
// `--flag=value`, `--bool`, `--bool=false`), `-h`, and `--` to end flags. Pure, so that every
// rule is unit-tested without spawning a process.
import { parseGoDuration } from "./duration.ts";
import { KubenoError } from "./error.ts";

/** Exit codes of an operator program. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** A wrong command line: unknown command or flag, a missing or malformed value. Exit code 2. */
export class UsageError extends KubenoError {
  /**
   * @param message One line naming what was wrong.
   * @param command The command whose usage to point at, if known.
   */
  constructor(message: string, readonly command?: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** One flag a command accepts. */
export interface FlagSpec {
  /** Long name without dashes, e.g. `kubeconfig`. */
  name: string;
  /** `string` takes a value; `boolean` is a switch that may be written `--x=false`. */
  type: "string" | "boolean";
  /** One line for the help text. */
  description: string;
  /** Placeholder of the value in the help text, e.g. `PATH`. */
  valueName?: string;
  /** Allowed values, checked while parsing. */
  choices?: readonly string[];
  /** Default shown in the help text. */
  default?: string;
}

/** Parsed flags by long name; absent when not given. */
export type Flags = Record<string, string | boolean | undefined>;

/** The global flags every command accepts. */
export const GLOBAL_FLAGS: readonly FlagSpec[] = [
  {
    name: "kubeconfig",
    type: "string",
    valueName: "PATH",
    description: "Kubeconfig file (default: KUBECONFIG, ~/.kube/config, in-cluster)",
  },
  { name: "context", type: "string", valueName: "NAME", description: "Kubeconfig context" },
  {
    name: "namespace",
    type: "string",
    valueName: "NS",
    description: "The operator's namespace (default: POD_NAMESPACE, then <name>-system)",
  },
  {
    name: "log-level",
    type: "string",
    valueName: "LEVEL",
    choices: ["debug", "info", "warning", "error"],
    default: "info",
    description: "Log level: debug, info, warning or error",
  },
  {
    name: "log-format",
    type: "string",
    valueName: "FORMAT",
    choices: ["json", "pretty"],
    description: "Log format: json or pretty (default: pretty on a terminal, else json)",
  },
  { name: "help", type: "boolean", description: "Show help" },
];

/**
 * Parses flags and positional arguments against the flags a command accepts.
 *
 * @param args The arguments, without the command.
 * @param specs The accepted flags.
 * @returns The flags by name and the positional arguments.
 * @throws {UsageError} For an unknown flag, a missing value or a value not among `choices`.
 */
export function parseFlags(
  args: readonly string[],
  specs: readonly FlagSpec[],
): { flags: Flags; positionals: string[] } {
  const flags: Flags = {};
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (arg === "-h") {
      flags.help = true;
      continue;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith("--")) throw new UsageError(`Unknown flag "${arg}"`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = specs.find((s) => s.name === name);
    if (!spec) throw new UsageError(`Unknown flag "--${name}"`);
    let value: string | boolean;
    if (spec.type === "boolean") {
      if (eq < 0) value = true;
      else {
        const v = arg.slice(eq + 1);
        if (v !== "true" && v !== "false") {
          throw new UsageError(`Flag "--${name}" takes true or false, not "${v}"`);
        }
        value = v === "true";
      }
    } else if (eq >= 0) {
      value = arg.slice(eq + 1);
    } else {
      if (i + 1 >= args.length) throw new UsageError(`Flag "--${name}" needs a value`);
      value = args[++i];
    }
    if (spec.choices && typeof value === "string" && !spec.choices.includes(value)) {
      throw new UsageError(
        `Flag "--${name}" takes one of ${spec.choices.join(", ")}, not "${value}"`,
      );
    }
    flags[name] = value;
  }
  return { flags, positionals };
}

/**
 * Finds the command in a command line whose flags may come before it: the first argument
 * that is neither a flag nor a flag's value.
 *
 * @param args The whole command line.
 * @param valueFlags Names of every flag that takes a value, in any command.
 * @returns The command and the other arguments, or no command.
 */
export function splitCommand(
  args: readonly string[],
  valueFlags: ReadonlySet<string>,
): { command?: string; rest: string[] } {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") break;
    if (a.startsWith("--")) {
      if (!a.includes("=") && valueFlags.has(a.slice(2))) i++;
      continue;
    }
    if (a.startsWith("-") && a !== "-") continue;
    return { command: a, rest: [...args.slice(0, i), ...args.slice(i + 1)] };
  }
  return { rest: [...args] };
}

/**
 * Parses a duration in Go's form, as kubebuilder's flags take them: `90s`, `2m`, `500ms`,
 * `1.5s`, `1h`, or a sequence such as `1m30s`; a bare number is seconds.
 *
 * @param text The duration.
 * @param flag The flag it came from, for the error.
 * @returns Milliseconds.
 * @throws {UsageError} When it is not a duration.
 */
export function parseDuration(text: string, flag: string): number {
  const t = text.trim();
  const bad = () => new UsageError(`Flag "--${flag}" takes a duration such as 60s, not "${text}"`);
  if (/^\d+(?:\.\d+)?$/.test(t)) return Math.round(Number(t) * 1_000);
  const ms = parseGoDuration(t);
  if (ms === undefined) throw bad();
  return ms;
}

/**
 * Parses a comma-separated list, dropping empty entries and duplicates.
 *
 * @param text The list, e.g. `a,b`.
 * @returns The entries.
 */
export function parseList(text: string | undefined): string[] {
  return [...new Set((text ?? "").split(",").map((s) => s.trim()).filter(Boolean))];
}

/**
 * Formats the flag table of a help text.
 *
 * @param specs The flags.
 * @returns Aligned lines, one per flag.
 */
export function formatFlags(specs: readonly FlagSpec[]): string {
  const left = specs.map((s) =>
    `  --${s.name}${s.type === "string" ? ` ${s.valueName ?? "VALUE"}` : ""}`
  );
  const width = Math.max(...left.map((l) => l.length)) + 2;
  return specs.map((s, i) =>
    `${left[i].padEnd(width)}${s.description}${s.default ? ` (default: ${s.default})` : ""}`
  ).join("\n");
}
