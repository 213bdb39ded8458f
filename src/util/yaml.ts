/**
 * kubeno's one door to YAML. It wraps `npm:yaml` because JSR's `@std/yaml` cannot be reached
 * from the machines kubeno is built on; swapping back is a change to this file alone.
 *
 * @module
 */
import { parseAllDocuments, stringify } from "yaml";

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
  return docs.map((d) => stringify(d, { lineWidth: 0, aliasDuplicateObjects: false })).join(
    "---\n",
  );
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
  const out: unknown[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) {
      const e = doc.errors[0];
      throw new SyntaxError(
        `Cannot parse YAML at line ${e.linePos?.[0].line ?? "?"}: ${e.message.split("\n")[0]}`,
      );
    }
    const v = doc.toJS();
    if (v !== null && v !== undefined) out.push(v);
  }
  return out;
}
