/**
 * `kubeno import`: types, zod validation and a `Resource` for CRDs this operator does not
 * define (cert-manager's Certificate, Gateway API routes, ServiceMonitors…), from a CRD YAML
 * file, a URL, or a CRD installed in the current cluster. The module it writes is what an
 * author would write with `defineResource`: one resource per served version.
 *
 * @module
 */
import { type CommandIo, firstLine } from "../util/cli_io.ts";
import { formatFlags, GLOBAL_FLAGS, parseFlags } from "../util/args.ts";
import { type KubenoCommand, UsageError } from "./common.ts";
import { type CrdInput, crdModule, crdProblem } from "./_import_codegen.ts";

const FLAGS = [
  {
    name: "out",
    type: "string",
    valueName: "FILE",
    description: "Where to write the module (default: standard output)",
  },
  {
    name: "schema-import",
    type: "string",
    valueName: "SPECIFIER",
    default: "@kubeno/kubeno/schema",
    description: "The module the generated code imports defineResource and z from",
  },
  ...GLOBAL_FLAGS.filter((f) => ["kubeconfig", "context", "help"].includes(f.name)),
] as const;

/** Options of {@linkcode importCrds}. */
export interface ImportOptions {
  /**
   * The module the generated code imports kubeno's schema API from.
   * @default "@kubeno/kubeno/schema"
   */
  schemaImport?: string;
  /**
   * Kubeconfig for a CRD read from the cluster.
   * @default KUBECONFIG, ~/.kube/config, in-cluster
   */
  kubeconfig?: string;
  /**
   * Its context.
   * @default the current context
   */
  context?: string;
}

/**
 * Reads CRDs from a file, a URL (`http:`/`https:`) or the cluster (a CRD name such as
 * `certificates.cert-manager.io`), and writes the TypeScript module for them.
 *
 * @param source A path, a URL or a CRD name.
 * @param options Import specifier and kubeconfig.
 * @returns The module's text.
 * @throws {UsageError} When the source holds no CRD kubeno can read, or cannot be read.
 *
 * @example A CRD from a file
 * ```ts
 * import { importCrds } from "./import.ts";
 * const path = await Deno.makeTempFile({ suffix: ".yaml" });
 * await Deno.writeTextFile(path, `apiVersion: apiextensions.k8s.io/v1
 * kind: CustomResourceDefinition
 * metadata: { name: widgets.example.com }
 * spec:
 *   group: example.com
 *   names: { kind: Widget, plural: widgets }
 *   scope: Namespaced
 *   versions:
 *   - name: v1
 *     served: true
 *     storage: true
 *     schema:
 *       openAPIV3Schema:
 *         type: object
 *         properties:
 *           spec:
 *             type: object
 *             properties: { size: { type: integer, minimum: 1 } }
 * `);
 * const code = await importCrds(path);
 * if (!code.includes("export const Widget = defineResource(") || !code.includes("z.int().min(1)")) {
 *   throw new Error(code);
 * }
 * await Deno.remove(path);
 * ```
 */
export async function importCrds(source: string, options: ImportOptions = {}): Promise<string> {
  const docs = await readSource(source, options);
  const crds: CrdInput[] = [];
  for (const doc of docs) {
    if (doc === null || doc === undefined) continue;
    const problem = crdProblem(doc);
    if (problem && docs.length === 1) throw new UsageError(`Cannot import "${source}": ${problem}`);
    if (!problem) crds.push(doc as CrdInput);
  }
  if (crds.length === 0) {
    throw new UsageError(`Cannot import "${source}": it holds no CustomResourceDefinition`);
  }
  return crdModule(crds, {
    source: source,
    schemaImport: options.schemaImport ?? "@kubeno/kubeno/schema",
  });
}

async function readSource(source: string, options: ImportOptions): Promise<unknown[]> {
  const { fromYaml } = await import("../util/yaml.ts");
  const parse = (text: string) => {
    try {
      return fromYaml(text);
    } catch (e) {
      throw new UsageError(`Cannot import "${source}": ${firstLine(e)}`);
    }
  };
  if (/^https?:\/\//.test(source)) {
    let res: Response;
    try {
      res = await fetch(source);
    } catch (e) {
      throw new UsageError(`Cannot import "${source}": ${firstLine(e)}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new UsageError(`Cannot import "${source}": the server answered ${res.status}`);
    }
    return parse(await res.text());
  }
  let text: string | undefined;
  try {
    text = await Deno.readTextFile(source);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new UsageError(`Cannot import "${source}": ${firstLine(e)}`);
    }
  }
  if (text !== undefined) return parse(text);
  if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(source) || /\.(ya?ml|json)$/.test(source)) {
    throw new UsageError(
      `Cannot import "${source}": no such file; pass a CRD file, a URL, or a CRD name such as certificates.cert-manager.io`,
    );
  }
  const { createClient } = await import("../client/client.ts");
  const { CustomResourceDefinition } = await import("../core/kinds_cluster.ts");
  using client = await createClient({ kubeconfig: options.kubeconfig, context: options.context });
  return [await client.get(CustomResourceDefinition, source)];
}

/** `kubeno import`. */
export const importCommand: KubenoCommand = {
  name: "import",
  summary: "Write zod schemas and Resources for a CRD (file, URL or cluster)",
  help: `Usage: kubeno import <crd.yaml | URL | CRD name> [--out FILE]

Writes a TypeScript module for a CustomResourceDefinition kubeno does not define: for each
served version a zod schema of spec and status and a Resource (defineResource), so that
ctx.apply, parse and the cache are typed and validated as for your own kinds. The source is
a YAML file (several documents allowed), an http(s) URL, or the name of a CRD installed in
the cluster (e.g. certificates.cert-manager.io, read with --kubeconfig/--context).

Enums, bounds, patterns, int-or-string, preserve-unknown-fields, list and map types, CEL
rules (cel(), evaluated by the API server), printer columns, scope and the scale
subresource carry over; string formats and oneOf/anyOf stay as comments.

Flags:
${formatFlags(FLAGS)}`,
  async run(args: readonly string[], io: CommandIo): Promise<number> {
    const { flags, positionals } = parseFlags(args, FLAGS);
    if (flags.help) {
      io.out(importCommand.help);
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UsageError(
        positionals.length === 0
          ? "kubeno import needs a CRD file, URL or CRD name"
          : `Unexpected argument "${positionals[1]}"; kubeno import takes one source`,
      );
    }
    const str = (name: string) =>
      typeof flags[name] === "string" ? flags[name] as string : undefined;
    const code = await importCrds(positionals[0], {
      schemaImport: str("schema-import"),
      kubeconfig: str("kubeconfig"),
      context: str("context"),
    });
    const out = str("out");
    if (out) {
      await Deno.writeTextFile(out, code);
      io.err(`Wrote ${out}`);
    } else io.out(code);
    return 0;
  },
};
