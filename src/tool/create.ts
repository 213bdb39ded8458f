/**
 * `kubeno create resource --group G --version V --kind K`: adds `resources/<kind>.ts` (a
 * resource and a controller skeleton) and a sample to a project made by `kubeno init`, and
 * registers the controller in its entry point at the marked points — an import above
 * `// kubeno:resources` and the controller above `// kubeno:controllers` — changing no other
 * line.
 *
 * Refuses (exit 2) when the entry point lacks the markers, when the file exists, or when the
 * kind or its controller's name is already in the entry point. Nothing is written unless
 * everything can be.
 *
 * @module
 */
import type { CommandIo } from "../util/cli_io.ts";
import { join, resolve } from "node:path";
import { type FlagSpec, formatFlags, parseFlags } from "../util/args.ts";
import {
  checkGroup,
  checkKind,
  checkVersion,
  formatFiles,
  type KubenoCommand,
  requireFlag,
  UsageError,
} from "./common.ts";
import {
  controllerId,
  CONTROLLERS_MARKER,
  fileStem,
  type ResourceNames,
  RESOURCES_MARKER,
  resourceTs,
  sampleYaml,
} from "./_templates_code.ts";

/** Entry points searched for the markers, in order. */
export const ENTRY_POINTS = ["operator.ts", "main.ts"];

/** Options of {@linkcode createResource}. */
export interface CreateResourceOptions extends ResourceNames {
  /**
   * The project directory.
   * @default the current directory
   */
  dir?: string;
}

/** What {@linkcode createResource} changed. */
export interface CreateResourceResult {
  /** The entry point edited, relative to the project. */
  entry: string;
  /** The files written, relative to the project. */
  files: string[];
}

/**
 * Adds a resource and its controller to a project and registers the controller.
 *
 * @param options The group, version, kind and project directory.
 * @returns The entry point edited and the files written.
 * @throws {UsageError} For an invalid name, no entry point with the markers, a file that
 * exists, or a kind already defined in the entry point.
 *
 * @example Add a resource to a new project
 * ```ts
 * import { initProject } from "./init.ts";
 * import { createResource } from "./create.ts";
 * const dir = await Deno.makeTempDir();
 * await initProject(dir, { force: true });
 * const res = await createResource({ dir, group: "apps.example.com", version: "v1", kind: "Backup" });
 * if (res.files[0] !== "resources/backup.ts") throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function createResource(
  options: CreateResourceOptions,
): Promise<CreateResourceResult> {
  const names: ResourceNames = {
    group: checkGroup(options.group),
    version: checkVersion(options.version),
    kind: checkKind(options.kind),
  };
  const dir = resolve(options.dir ?? ".");
  const { entry, text } = await findEntry(dir);
  const ctrl = controllerId(names.kind);
  const stem = fileStem(names.kind);
  const file = `resources/${stem}.ts`;
  const sample = `samples/${stem}.yaml`;
  if (new RegExp(`\\b${ctrl}\\b`).test(text)) {
    throw new UsageError(`${entry} already has "${ctrl}"; pick another --kind`);
  }
  if (text.includes(`kind: "${names.kind}"`) && text.includes(`group: "${names.group}"`)) {
    throw new UsageError(
      `${entry} already defines kind ${names.kind} of group ${names.group}; pick another --kind`,
    );
  }
  for (const f of [file, sample]) {
    if (await exists(join(dir, f))) {
      throw new UsageError(`${f} exists; remove it or pick another --kind`);
    }
  }
  const edited = insertAbove(
    insertAbove(text, RESOURCES_MARKER, importLine(ctrl, `./${file}`)),
    CONTROLLERS_MARKER,
    `${ctrl},`,
  );
  await Deno.mkdir(join(dir, "resources"), { recursive: true });
  await Deno.mkdir(join(dir, "samples"), { recursive: true });
  await Deno.writeTextFile(join(dir, file), resourceTs(names), { createNew: true });
  await Deno.writeTextFile(join(dir, sample), sampleYaml(names, "  message: hello\n"));
  await formatFiles(dir, [file, sample]);
  await Deno.writeTextFile(join(dir, entry), edited);
  return { entry, files: [file, sample] };
}

async function findEntry(dir: string): Promise<{ entry: string; text: string }> {
  const found: string[] = [];
  for (const entry of ENTRY_POINTS) {
    let text: string;
    try {
      text = await Deno.readTextFile(join(dir, entry));
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    found.push(entry);
    if (markerLine(text, RESOURCES_MARKER) >= 0 && markerLine(text, CONTROLLERS_MARKER) >= 0) {
      return { entry, text };
    }
  }
  if (!found.length) {
    throw new UsageError(
      `No ${ENTRY_POINTS.join(" or ")} in ${dir}; run this in a project made by "kubeno init" ` +
        `(or pass --dir)`,
    );
  }
  throw new UsageError(
    `${found[0]} lacks the markers "${RESOURCES_MARKER}" (after the imports) and ` +
      `"${CONTROLLERS_MARKER}" (inside the controllers array); add them, or register the ` +
      `controller yourself`,
  );
}

/** An import as `deno fmt` writes it at its default width. */
function importLine(name: string, path: string): string {
  const line = `import { ${name} } from "${path}";`;
  return line.length <= 80 ? line : `import {\n  ${name},\n} from "${path}";`;
}

/** Index of the line holding the marker as a whole comment, or -1. */
function markerLine(text: string, marker: string): number {
  return text.split("\n").findIndex((l) => l.trim().startsWith(marker));
}

/** Inserts `line` above the marker's line, with the marker's indentation. */
function insertAbove(text: string, marker: string, line: string): string {
  const lines = text.split("\n");
  const i = markerLine(text, marker);
  const indent = lines[i].match(/^\s*/)![0];
  lines.splice(i, 0, indent + line);
  return lines.join("\n");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

const FLAGS: readonly FlagSpec[] = [
  { name: "group", type: "string", valueName: "GROUP", description: "API group (required)" },
  { name: "version", type: "string", valueName: "VERSION", description: "API version (required)" },
  { name: "kind", type: "string", valueName: "KIND", description: "Kind (required)" },
  {
    name: "dir",
    type: "string",
    valueName: "DIR",
    default: ".",
    description: "The project's directory",
  },
  { name: "help", type: "boolean", description: "Show help" },
];

/** The `create resource` command. */
export const createCommand: KubenoCommand = {
  name: "create resource",
  summary: "Add a resource and its controller to a project",
  help: `Usage: kubeno create resource --group G --version V --kind K [--dir DIR]

Adds resources/<kind>.ts (the resource and a controller that owns a ConfigMap) and
samples/<kind>.yaml, and registers the controller in operator.ts (or main.ts): an import
above "${RESOURCES_MARKER}" and the controller above "${CONTROLLERS_MARKER}". No other
line changes.

Flags:
${formatFlags(FLAGS)}`,
  async run(args: readonly string[], io: CommandIo): Promise<number> {
    const [what, ...rest] = args;
    if (what === "--help" || what === "-h" || what === "help") {
      io.out(createCommand.help);
      return 0;
    }
    if (what !== "resource") {
      throw new UsageError(
        what === undefined
          ? 'kubeno create needs what to create: "kubeno create resource --group G --version V --kind K"'
          : `Unknown "kubeno create ${what}"; only "kubeno create resource" exists`,
      );
    }
    const { flags, positionals } = parseFlags(rest, FLAGS);
    if (flags.help) {
      io.out(createCommand.help);
      return 0;
    }
    if (positionals.length) {
      throw new UsageError(
        `Unexpected argument "${positionals[0]}"; see "kubeno create resource --help"`,
      );
    }
    const res = await createResource({
      group: requireFlag(flags, "group", "create resource"),
      version: requireFlag(flags, "version", "create resource"),
      kind: requireFlag(flags, "kind", "create resource"),
      dir: typeof flags.dir === "string" ? flags.dir : undefined,
    });
    io.out(`Created ${res.files.join(" and ")}; registered its controller in ${res.entry}`);
    return 0;
  },
};
