/**
 * kubeno's one door to YAML. It wraps `npm:js-yaml` because JSR's `@std/yaml` (itself a port of
 * js-yaml) cannot be reached from the machines kubeno is built on; swapping back is a change to
 * this file alone. js-yaml is an ES module: `npm:yaml`, which kubeno used before, loads as
 * CommonJS and cost every program that imports kubeno about 10 MiB of resident memory and tens
 * of milliseconds at start (issue 29).
 *
 * @module
 */
import { dump, loadAll, YAMLException } from "js-yaml";

/**
 * Serialises values as YAML documents separated by `---`.
 *
 * @param docs The documents, e.g. Kubernetes objects.
 * @returns Multi-document YAML text ending in a newline.
 *
 * @example Two documents
 * ```ts
 * import { toYaml } from "./yaml.ts";
 * const text = toYaml([{ a: 1 }, { b: 2 }]);
 * if (text !== "a: 1\n---\nb: 2\n") throw new Error(text);
 * ```
 */
export function toYaml(docs: unknown[]): string {
  // No line folding, no anchors for objects that appear twice; strings a YAML 1.1 reader
  // (kubectl's) would take for another type ('yes', '0755', '2024-01-01') are quoted.
  return docs.map((d) => dump(d, { lineWidth: -1, noRefs: true })).join("---\n");
}

/**
 * Parses multi-document YAML, skipping empty documents.
 *
 * @param text YAML text.
 * @returns The documents as plain values.
 * @throws {SyntaxError} When the text is not valid YAML, naming the line.
 *
 * @example Reading a manifest
 * ```ts
 * import { fromYaml } from "./yaml.ts";
 * const [cm] = fromYaml("kind: ConfigMap\nmetadata: {name: a}\n");
 * if ((cm as { kind: string }).kind !== "ConfigMap") throw new Error();
 * ```
 */
export function fromYaml(text: string): unknown[] {
  let docs: unknown[];
  try {
    docs = loadAll(text);
  } catch (err) {
    if (!(err instanceof YAMLException)) throw err;
    const line = err.mark ? err.mark.line + 1 : "?";
    throw new SyntaxError(`Cannot parse YAML at line ${line}: ${err.reason ?? err.message}`);
  }
  return docs.filter((v) => v !== null && v !== undefined);
}
