/**
 * What kubeno's own subcommands (`init`, `create resource`, `compile`) share: the shape of a
 * command, where its output goes, and the naming rules a Kubernetes API imposes on the
 * group, version and kind a user picks.
 *
 * Errors in input are {@linkcode UsageError}s (exit code 2) whose message is one line naming
 * the value, the rule it breaks and what to do instead.
 *
 * @module
 */
import { UsageError } from "../util/args.ts";
import type { CommandIo } from "../util/cli_io.ts";
import { isDnsLabel, isDnsSubdomain } from "../util/names.ts";

export { UsageError };

/** One of kubeno's subcommands. */
export interface KubenoCommand {
  /** How it is invoked, e.g. `init` or `create resource`. */
  name: string;
  /** One line for `kubeno help`. */
  summary: string;
  /** The full help text of `kubeno <name> --help`. */
  help: string;
  /**
   * Runs the command.
   *
   * @param args The arguments after the command's name.
   * @param io Where to write.
   * @returns The exit code: 0 ok, 1 runtime failure.
   * @throws {UsageError} For bad input (exit code 2).
   */
  run(args: readonly string[], io: CommandIo): Promise<number>;
}

/** The rule of {@linkcode checkGroup}, as error messages state it. */
export const GROUP_RULE =
  'a DNS-1123 subdomain with at least one dot (lowercase letters, digits, "-" and ".", ' +
  'e.g. "apps.example.com")';
/** The rule of {@linkcode checkVersion}, as error messages state it. */
export const VERSION_RULE = 'v\\d+((alpha|beta)\\d+)? (e.g. "v1", "v1alpha1", "v2beta3")';
/** The rule of {@linkcode checkKind}, as error messages state it. */
export const KIND_RULE = 'UpperCamelCase, ^[A-Z][a-zA-Z0-9]*$ (e.g. "MyApp")';
/** The rule of {@linkcode checkName}, as error messages state it. */
export const NAME_RULE = 'a DNS-1123 label (lowercase letters, digits and "-", at most 63, ' +
  'e.g. "myapp-operator")';

/**
 * Checks an API group: a DNS-1123 subdomain with at least one dot, as CRDs require.
 *
 * @param group The group, e.g. `apps.example.com`.
 * @returns The group.
 * @throws {UsageError} When it breaks the rule; the message quotes it and states the rule.
 *
 * @example Accept and refuse
 * ```ts
 * import { checkGroup } from "./common.ts";
 * checkGroup("apps.example.com");
 * let refused = false;
 * try { checkGroup("Apps"); } catch { refused = true; }
 * if (!refused) throw new Error("expected a refusal");
 * ```
 */
export function checkGroup(group: string): string {
  const ok = group.includes(".") && isDnsSubdomain(group);
  if (!ok) throw new UsageError(`Invalid --group "${group}": it must be ${GROUP_RULE}`);
  return group;
}

/**
 * Checks an API version: `v1`, `v1alpha1`, `v2beta3` and so on.
 *
 * @param version The version.
 * @returns The version.
 * @throws {UsageError} When it breaks the rule.
 *
 * @example Accept a pre-release version
 * ```ts
 * import { checkVersion } from "./common.ts";
 * if (checkVersion("v1beta2") !== "v1beta2") throw new Error();
 * ```
 */
export function checkVersion(version: string): string {
  if (!/^v[1-9]\d*((alpha|beta)[1-9]\d*)?$/.test(version)) {
    throw new UsageError(`Invalid --version "${version}": it must match ${VERSION_RULE}`);
  }
  return version;
}

/**
 * Checks a kind: UpperCamelCase, which also makes it a valid TypeScript identifier, and not
 * a JavaScript global such as `Promise` (the generated code declares a constant named after
 * the kind).
 *
 * @param kind The kind.
 * @returns The kind.
 * @throws {UsageError} When it breaks the rule.
 *
 * @example Refuse a lower-case kind
 * ```ts
 * import { checkKind } from "./common.ts";
 * let refused = false;
 * try { checkKind("myApp"); } catch { refused = true; }
 * if (!refused || checkKind("MyApp") !== "MyApp") throw new Error();
 * ```
 */
export function checkKind(kind: string): string {
  if (!/^[A-Z][a-zA-Z0-9]*$/.test(kind) || kind.length > 63) {
    throw new UsageError(`Invalid --kind "${kind}": it must be ${KIND_RULE}`);
  }
  if (kind in globalThis) {
    // The kind names a constant in the generated code, which would shadow the global.
    throw new UsageError(
      `Invalid --kind "${kind}": it is a JavaScript global, which the generated code would ` +
        `shadow; pick another kind`,
    );
  }
  return kind;
}

/**
 * Checks an operator name: a DNS-1123 label, since it names the operator's Deployment,
 * ServiceAccount and Lease.
 *
 * @param name The name.
 * @returns The name.
 * @throws {UsageError} When it breaks the rule.
 *
 * @example Accept a name
 * ```ts
 * import { checkName } from "./common.ts";
 * if (checkName("myapp-operator") !== "myapp-operator") throw new Error();
 * ```
 */
export function checkName(name: string): string {
  if (!isDnsLabel(name)) throw new UsageError(`Invalid --name "${name}": it must be ${NAME_RULE}`);
  return name;
}

/**
 * Reads a string flag that a command requires.
 *
 * @param flags The parsed flags.
 * @param name The flag's name.
 * @param command The command, for the error.
 * @returns The value.
 * @throws {UsageError} When the flag is missing or empty.
 *
 * @example Read a required flag
 * ```ts
 * import { requireFlag } from "./common.ts";
 * if (requireFlag({ kind: "MyApp" }, "kind", "create resource") !== "MyApp") throw new Error();
 * ```
 */
export function requireFlag(
  flags: Record<string, string | boolean | undefined>,
  name: string,
  command: string,
): string {
  const v = flags[name];
  if (typeof v !== "string" || !v) {
    throw new UsageError(`"kubeno ${command}" needs --${name}; see "kubeno ${command} --help"`);
  }
  return v;
}

/**
 * Formats files with `deno fmt` under the project's own settings, so generated code wraps
 * as the user's formatter wants whatever the length of their names. Best effort: a file
 * the formatter rejects is left as written.
 *
 * @param dir The project directory (its `deno.json` settings apply).
 * @param files Paths relative to `dir`; only `.ts`, `.json`, `.md` and `.yaml` are passed.
 * @returns Resolves when done.
 *
 * @example Format a generated file
 * ```ts
 * import { formatFiles } from "./common.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a.ts`, "export const a = {b:1}");
 * await formatFiles(dir, ["a.ts"]);
 * if (await Deno.readTextFile(`${dir}/a.ts`) !== "export const a = { b: 1 };\n") throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function formatFiles(dir: string, files: readonly string[]): Promise<void> {
  const targets = files.filter((f) => /\.(ts|json|md|ya?ml)$/.test(f));
  if (!targets.length) return;
  await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", ...targets],
    cwd: dir,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
}
