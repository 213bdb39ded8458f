/**
 * `kubeno init <dir>`: scaffolds a new operator project that passes its own `deno check` and
 * tests as generated — `deno.json` (import map and the tasks `dev`, `test`, `check`,
 * `compile`, `manifests`), `operator.ts` (a resource, its controller owning a Deployment,
 * the operator program, and the markers `kubeno create resource` registers at),
 * `operator_test.ts` (against a real control plane), `dev.ts`, a sample object, a
 * `Dockerfile` and a `README.md`.
 *
 * Guarantees: nothing is written into a non-empty directory without `--force`, and with it
 * only the scaffold's own files are replaced; every name is checked before anything is
 * written.
 *
 * @module
 */
import { isDnsLabel } from "../util/names.ts";
import type { CommandIo } from "../util/cli_io.ts";
import { basename, join, resolve } from "node:path";
import { type FlagSpec, formatFlags, parseFlags } from "../util/args.ts";
import {
  checkGroup,
  checkKind,
  checkName,
  checkVersion,
  formatFiles,
  type KubenoCommand,
  UsageError,
} from "./common.ts";
import { operatorPermissions } from "./compile.ts";
import { DEFAULT_KUBENO, kubenoImports } from "./kubeno_imports.ts";
import {
  devTs,
  fileStem,
  operatorTestTs,
  operatorTs,
  type ProjectNames,
  sampleYaml,
} from "./_templates_code.ts";
import { denoJson, dockerfile, GITIGNORE, readme } from "./_templates_project.ts";

/** Options of {@linkcode initProject}. */
export interface InitOptions {
  /**
   * API group of the first resource.
   * @default "apps.example.com"
   */
  group?: string;
  /**
   * Its version.
   * @default "v1alpha1"
   */
  version?: string;
  /**
   * Its kind.
   * @default "Myapp"
   */
  kind?: string;
  /**
   * The operator's name.
   * @default the directory's name when it is a DNS label, else `<kind>-operator`
   */
  name?: string;
  /**
   * Where kubeno comes from: a `jsr:` specifier, or the path or URL of a kubeno checkout.
   * @default DEFAULT_KUBENO
   */
  kubeno?: string;
  /**
   * Write into a non-empty directory, replacing files of the same names.
   * @default false
   */
  force?: boolean;
}

/** What {@linkcode initProject} wrote. */
export interface InitResult {
  /** The project's absolute directory. */
  dir: string;
  /** The names used. */
  names: ProjectNames;
  /** The files written, relative to `dir`. */
  files: string[];
}

/**
 * Scaffolds an operator project.
 *
 * @param dir The project directory; created when missing.
 * @param options Names, kubeno's source, `force`.
 * @returns The directory, names and files written.
 * @throws {UsageError} For an invalid name, an unusable `kubeno` spec, or a non-empty
 * directory without `force`.
 *
 * @example Scaffold into a temp dir
 * ```ts
 * import { initProject } from "./init.ts";
 * const dir = await Deno.makeTempDir();
 * const res = await initProject(`${dir}/shop`, { kind: "Shop", group: "shop.example.com" });
 * if (res.names.name !== "shop" || !res.files.includes("operator.ts")) throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function initProject(dir: string, options: InitOptions = {}): Promise<InitResult> {
  const abs = resolve(dir);
  const kind = checkKind(options.kind ?? "Myapp");
  const names: ProjectNames = {
    group: checkGroup(options.group ?? "apps.example.com"),
    version: checkVersion(options.version ?? "v1alpha1"),
    kind,
    name: options.name !== undefined
      ? checkName(options.name)
      : isDnsLabel(basename(abs))
      ? basename(abs)
      : `${fileStem(kind)}-operator`,
  };
  const kubeno = options.kubeno ?? DEFAULT_KUBENO;
  const imports = await kubenoImports(kubeno, Deno.cwd());
  if (!options.force && !(await isEmptyOrMissing(abs))) {
    throw new UsageError(
      `Directory "${dir}" is not empty; pick a new or empty directory, or pass --force to ` +
        `overwrite the scaffold's files`,
    );
  }
  const stem = fileStem(kind);
  const files: Record<string, string> = {
    "deno.json": denoJson(names, imports),
    "operator.ts": operatorTs(names),
    "operator_test.ts": operatorTestTs(names),
    "dev.ts": devTs(names),
    [`samples/${stem}.yaml`]: sampleYaml(names, "  image: nginx:1.27\n  replicas: 2\n"),
    "Dockerfile": dockerfile(names, operatorPermissions(), Deno.version.deno),
    "README.md": readme(names, kubeno),
    ".gitignore": GITIGNORE,
  };
  await Deno.mkdir(join(abs, "samples"), { recursive: true });
  await Deno.mkdir(join(abs, "resources"), { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    await Deno.writeTextFile(join(abs, path), text);
  }
  await formatFiles(abs, Object.keys(files));
  return { dir: abs, names, files: Object.keys(files) };
}

async function isEmptyOrMissing(dir: string): Promise<boolean> {
  try {
    for await (const _ of Deno.readDir(dir)) return false;
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return true;
    if (err instanceof Deno.errors.NotADirectory) {
      throw new UsageError(`"${dir}" is a file; kubeno init takes a directory`);
    }
    throw err;
  }
}

const FLAGS: readonly FlagSpec[] = [
  {
    name: "group",
    type: "string",
    valueName: "GROUP",
    default: "apps.example.com",
    description: "API group: a DNS-1123 subdomain with at least one dot",
  },
  {
    name: "version",
    type: "string",
    valueName: "VERSION",
    default: "v1alpha1",
    description: "API version: v1, v1alpha1, v2beta3...",
  },
  {
    name: "kind",
    type: "string",
    valueName: "KIND",
    default: "Myapp",
    description: "Kind, UpperCamelCase",
  },
  {
    name: "name",
    type: "string",
    valueName: "NAME",
    description: "Operator name, a DNS label (default: the directory's name, or <kind>-operator)",
  },
  {
    name: "kubeno",
    type: "string",
    valueName: "SPEC",
    default: DEFAULT_KUBENO,
    description: "kubeno to import: a jsr: specifier, or a checkout's path or file:/https: URL",
  },
  { name: "force", type: "boolean", description: "Write into a non-empty directory" },
  { name: "help", type: "boolean", description: "Show help" },
];

/** The `init` command. */
export const initCommand: KubenoCommand = {
  name: "init",
  summary: "Scaffold a new operator project",
  help: `Usage: kubeno init <dir> [--group G --version V --kind K] [--name N] [--force]

Creates an operator project in <dir>: deno.json with the tasks dev, test, check, compile
and manifests; operator.ts (a defineResource resource, a controller that owns a
Deployment, and the operator program); operator_test.ts, which runs the operator against
a real control plane; dev.ts; a sample; a Dockerfile and a README. The project imports
@kubeno/kubeno through its import map: from JSR, or from a checkout with --kubeno PATH.

Flags:
${formatFlags(FLAGS)}

Example:
  kubeno init myapp-operator --group apps.example.com --version v1alpha1 --kind Myapp`,
  async run(args: readonly string[], io: CommandIo): Promise<number> {
    const { flags, positionals } = parseFlags(args, FLAGS);
    if (flags.help) {
      io.out(initCommand.help);
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UsageError(
        positionals.length
          ? `Unexpected argument "${positionals[1]}"; kubeno init takes one directory`
          : 'kubeno init needs a directory, e.g. "kubeno init myapp-operator"',
      );
    }
    const str = (n: string) => typeof flags[n] === "string" ? flags[n] as string : undefined;
    const res = await initProject(positionals[0], {
      group: str("group"),
      version: str("version"),
      kind: str("kind"),
      name: str("name"),
      kubeno: str("kubeno"),
      force: flags.force === true,
    });
    const { names } = res;
    io.out(
      `Created ${names.name} (${names.group}/${names.version}, Kind=${names.kind}) in ${res.dir}:`,
    );
    for (const f of res.files) io.out(`  ${f}`);
    io.out("  resources/ (empty: `kubeno create resource` adds resources here)");
    io.out(`
Next:
  cd ${positionals[0]}
  deno task dev    # a local control plane with the operator running
  deno task test   # its test against a real control plane`);
    return 0;
  },
};
