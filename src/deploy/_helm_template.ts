/**
 * Private: turns generated objects into Helm templates. Values that a chart makes
 * configurable are written into the objects as placeholders (plain scalars that YAML never
 * quotes), the objects are serialized as `manifests` serializes them, and each placeholder
 * line is then replaced by its Go template. With the chart's default values the templates
 * render the objects exactly as they were generated.
 *
 * @module
 */
import { toYaml } from "../util/yaml.ts";

type Hole =
  | { kind: "value"; expr: string }
  | { kind: "block"; expr: string }
  | { kind: "optional"; expr: string }
  | { kind: "optionalScalar"; expr: string }
  | { kind: "item"; cond: string; value: unknown };

const MARK = /KUBENOTPL(\d+)X/;

/** Collects placeholders and renders YAML with them replaced. */
export class TemplateBuilder {
  #holes: Hole[] = [];

  #mark(hole: Hole): string {
    this.#holes.push(hole);
    return `KUBENOTPL${this.#holes.length - 1}X`;
  }

  /** A scalar (or part of one) rendered as `{{ expr }}`. */
  value(expr: string): string {
    return this.#mark({ kind: "value", expr });
  }

  /** A mapping value rendered from a values block: `key: {{- toYaml expr | nindent N }}`. */
  block(expr: string): string {
    return this.#mark({ kind: "block", expr });
  }

  /** A mapping key present only when `expr` is not empty, its value a block from values. */
  optional(expr: string): string {
    return this.#mark({ kind: "optional", expr });
  }

  /** A mapping key present only when the string `expr` is not empty: `key: "<expr>"`. */
  optionalScalar(expr: string): string {
    return this.#mark({ kind: "optionalScalar", expr });
  }

  /** A list item present only when `cond` holds; `value` may hold placeholders itself. */
  item(cond: string, value: unknown): string {
    return this.#mark({ kind: "item", cond, value });
  }

  /**
   * Serializes `docs` (each optionally under a condition or inside a range) and replaces
   * the placeholders.
   */
  render(docs: readonly TemplateDoc[]): string {
    return docs.map((d) => {
      const body = this.lines(toYaml([d.object]).trimEnd());
      let text = `---\n${body}\n`;
      if (d.range) text = `{{- range ${d.range} }}\n${text}{{- end }}\n`;
      if (d.when) text = `{{- if ${d.when} }}\n${text}{{- end }}\n`;
      return text;
    }).join("");
  }

  /** Replaces the placeholders of serialized YAML, line by line. */
  lines(yaml: string): string {
    return yaml.split("\n").map((line) => this.#line(line)).join("\n");
  }

  #line(line: string): string {
    const m = MARK.exec(line);
    if (!m) return line;
    const hole = this.#holes[Number(m[1])];
    const indent = line.match(/^\s*/)![0];
    const key = line.slice(indent.length, m.index).replace(/^- /, "");
    switch (hole.kind) {
      case "value":
        return this.#line(line.replace(MARK, `{{ ${hole.expr} }}`));
      case "block":
        return `${indent}${key}{{- toYaml ${hole.expr} | nindent ${indent.length + 2} }}`;
      case "optional":
        return `${indent}{{- with ${hole.expr} }}\n${indent}${key}{{- toYaml . | nindent ${
          indent.length + 2
        } }}\n${indent}{{- end }}`;
      case "optionalScalar":
        return `${indent}{{- with ${hole.expr} }}\n${indent}${key}{{ . | quote }}\n${indent}{{- end }}`;
      case "item": {
        const item = toYaml([[hole.value]]).trimEnd().split("\n")
          .map((l) => `${indent}${l}`).join("\n");
        return `${indent}{{- if ${hole.cond} }}\n${this.lines(item)}\n${indent}{{- end }}`;
      }
    }
  }
}

/** One object of a template file. */
export interface TemplateDoc {
  /** The object, with placeholders. */
  object: unknown;
  /** Rendered only when this Go template condition holds. */
  when?: string;
  /** Rendered once per item: `$ns := $.Values.watchNamespaces`. */
  range?: string;
}
