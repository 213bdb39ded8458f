// Reading a kubeconfig without loading a YAML library. Kubeconfigs written by kubectl, kind,
// k3d, cloud CLIs and kubeno are a small part of YAML: block mappings and sequences, plain
// and quoted one-line scalars, comments, and one-line flow collections. This parser reads
// exactly that part, with the YAML 1.2 core schema the full parser (npm:js-yaml, behind
// util/yaml.ts) uses, and gives up — returns `undefined` — on anything else: block scalars,
// anchors, aliases, tags, multi-line scalars or flows, several documents, tabs, duplicate
// keys. The caller then loads the full parser, which also produces the error messages.
// Loading the full parser costs an operator about 2 MiB of resident memory and start-up time; a
// pod's in-cluster configuration needs no YAML at all.

/** Why the subset parser gave up (only used to unwind; the caller falls back). */
class Unsupported extends Error {}

interface Line {
  indent: number;
  text: string;
}

/**
 * Parses a one-document YAML text of the kubeconfig subset.
 *
 * @param source The text.
 * @returns The value (`null` for an empty document), or `undefined` when the text uses YAML
 * this parser does not read.
 */
export function parseKubeconfigYaml(source: string): unknown {
  try {
    const lines: Line[] = [];
    let first = true;
    for (const raw of source.split("\n")) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      const text = line.trimStart();
      if (text === "" || text.startsWith("#")) continue;
      const indentText = line.slice(0, line.length - text.length);
      if (indentText.includes("\t")) throw new Unsupported();
      if (first && (text === "---" || text.startsWith("--- #"))) {
        first = false;
        continue;
      }
      first = false;
      if (/^(---|\.\.\.)(\s|$)/.test(text) && indentText === "") throw new Unsupported();
      if (/^[%&*!?|>@`]/.test(text)) throw new Unsupported();
      lines.push({ indent: indentText.length, text: text.trimEnd() });
    }
    if (lines.length === 0) return null;
    const p = new Parser(lines);
    const value = p.node(0);
    if (p.i !== lines.length) throw new Unsupported();
    return value;
  } catch (e) {
    if (e instanceof Unsupported) return undefined;
    throw e;
  }
}

class Parser {
  i = 0;
  constructor(readonly lines: Line[]) {}

  node(minIndent: number): unknown {
    const line = this.lines[this.i];
    if (!line || line.indent < minIndent) return null;
    if (isSeqItem(line.text)) return this.seq(line.indent);
    if (splitKey(line.text)) return this.map(line.indent);
    this.i++;
    const value = inline(line.text);
    const next = this.lines[this.i];
    if (next && next.indent > line.indent) throw new Unsupported(); // a multi-line scalar
    return value;
  }

  map(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (this.i < this.lines.length) {
      const line = this.lines[this.i];
      if (line.indent < indent) break;
      if (line.indent > indent || isSeqItem(line.text)) throw new Unsupported();
      const kv = splitKey(line.text);
      if (!kv) throw new Unsupported();
      const [key, rest] = kv;
      if (Object.hasOwn(out, key) || key === "__proto__" || key === "<<") {
        throw new Unsupported();
      }
      this.i++;
      if (rest === "") {
        const next = this.lines[this.i];
        if (next && next.indent > indent) out[key] = this.node(next.indent);
        else if (next && next.indent === indent && isSeqItem(next.text)) {
          out[key] = this.seq(indent);
        } else out[key] = null;
      } else {
        out[key] = inline(rest);
        const next = this.lines[this.i];
        if (next && next.indent > indent) throw new Unsupported();
      }
    }
    return out;
  }

  seq(indent: number): unknown[] {
    const out: unknown[] = [];
    while (this.i < this.lines.length) {
      const line = this.lines[this.i];
      if (line.indent < indent || (line.indent === indent && !isSeqItem(line.text))) break;
      if (line.indent > indent) throw new Unsupported();
      const rest = line.text.slice(1);
      const content = rest.trimStart();
      if (content === "") {
        this.i++;
        const next = this.lines[this.i];
        out.push(next && next.indent > indent ? this.node(next.indent) : null);
        continue;
      }
      // "- key: value" starts a mapping at the column of "key"; "- - x" a nested sequence.
      const column = indent + 1 + (rest.length - content.length);
      if (isSeqItem(content) || splitKey(content)) {
        this.lines[this.i] = { indent: column, text: content };
        out.push(this.node(column));
      } else {
        this.i++;
        out.push(inline(content));
        const next = this.lines[this.i];
        if (next && next.indent > indent) throw new Unsupported();
      }
    }
    return out;
  }
}

function isSeqItem(text: string): boolean {
  return text === "-" || text.startsWith("- ");
}

/** A mapping entry's key and the rest of its line, or undefined when the line is no entry. */
function splitKey(text: string): [string, string] | undefined {
  let key: string;
  let after: string;
  if (text.startsWith('"') || text.startsWith("'")) {
    const [value, end] = quoted(text, 0);
    key = value;
    after = text.slice(end);
    if (!after.startsWith(":")) return undefined;
    after = after.slice(1);
  } else {
    if (/^[[{\]},#-]/.test(text) && !/^-[^\s]/.test(text)) return undefined;
    const m = text.match(/^([^#]*?):(?:\s|$)/);
    if (!m) return undefined;
    key = m[1].trimEnd();
    if (key === "" || /[{}[\],]/.test(key)) throw new Unsupported();
    // A key that resolves to a number, boolean or null is left to the full parser.
    if (typeof scalar(key) !== "string") throw new Unsupported();
    after = text.slice(m[0].length - (m[0].endsWith(":") ? 0 : 1));
  }
  if (after !== "" && !/^\s/.test(after)) return undefined;
  const rest = after.trim();
  return [key, rest.startsWith("#") ? "" : rest];
}

/** A value on the rest of a line: a quoted or plain scalar, or a one-line flow collection. */
function inline(text: string): unknown {
  if (/^[&*!|>%@`]/.test(text)) throw new Unsupported();
  if (text.startsWith("[") || text.startsWith("{")) {
    const f = new Flow(text);
    const value = f.value();
    f.end();
    return value;
  }
  if (text.startsWith('"') || text.startsWith("'")) {
    const [value, end] = quoted(text, 0);
    const tail = text.slice(end).trim();
    if (tail !== "" && !tail.startsWith("#")) throw new Unsupported();
    if (tail.startsWith("#") && !/\s/.test(text[end] ?? "")) throw new Unsupported();
    return value;
  }
  const comment = text.search(/\s#/);
  const plain = (comment < 0 ? text : text.slice(0, comment)).trimEnd();
  if (/:(\s|$)/.test(plain)) throw new Unsupported(); // "a: b: c" is an error in YAML
  return scalar(plain);
}

/** A one-line flow collection. */
class Flow {
  i = 0;
  constructor(readonly s: string) {}

  ws(): void {
    while (this.s[this.i] === " ") this.i++;
  }

  end(): void {
    this.ws();
    if (this.i < this.s.length && this.s[this.i] !== "#") throw new Unsupported();
    if (this.s[this.i] === "#" && this.s[this.i - 1] !== " ") throw new Unsupported();
  }

  value(): unknown {
    this.ws();
    const c = this.s[this.i];
    if (c === "[") return this.seq();
    if (c === "{") return this.map();
    if (c === '"' || c === "'") {
      const [v, end] = quoted(this.s, this.i);
      this.i = end;
      return v;
    }
    const m = this.s.slice(this.i).match(/^[^,[\]{}#]*/)![0];
    const text = m.replace(/\s+$/, "");
    if (text === "" || text.includes(": ") || /^[&*!|>%@`?]/.test(text)) throw new Unsupported();
    this.i += m.length;
    return scalar(text);
  }

  seq(): unknown[] {
    this.i++;
    const out: unknown[] = [];
    for (;;) {
      this.ws();
      if (this.s[this.i] === "]") {
        this.i++;
        return out;
      }
      out.push(this.value());
      this.ws();
      if (this.s[this.i] === ",") this.i++;
      else if (this.s[this.i] !== "]") throw new Unsupported();
    }
  }

  map(): Record<string, unknown> {
    this.i++;
    const out: Record<string, unknown> = {};
    for (;;) {
      this.ws();
      if (this.s[this.i] === "}") {
        this.i++;
        return out;
      }
      let key: string;
      const c = this.s[this.i];
      if (c === '"' || c === "'") {
        const [v, end] = quoted(this.s, this.i);
        key = v;
        this.i = end;
      } else {
        const m = this.s.slice(this.i).match(/^[^,[\]{}#:]*(?::(?!\s)[^,[\]{}#:]*)*/)![0];
        key = m.trim();
        this.i += m.length;
        if (key === "" || /^[&*!|>%@`?]/.test(key)) throw new Unsupported();
      }
      this.ws();
      if (this.s[this.i] !== ":") throw new Unsupported();
      this.i++;
      if (this.s[this.i] !== " " && !"\"'".includes(this.s[this.i - 2] ?? "")) {
        throw new Unsupported();
      }
      if (Object.hasOwn(out, key) || key === "__proto__" || key === "<<") throw new Unsupported();
      out[key] = this.value();
      this.ws();
      if (this.s[this.i] === ",") this.i++;
      else if (this.s[this.i] !== "}") throw new Unsupported();
    }
  }
}

/** A one-line quoted scalar starting at `start`: its value and the index after it. */
function quoted(s: string, start: number): [string, number] {
  const q = s[start];
  let out = "";
  let i = start + 1;
  while (i < s.length) {
    const c = s[i];
    if (q === "'") {
      if (c === "'") {
        if (s[i + 1] === "'") {
          out += "'";
          i += 2;
          continue;
        }
        return [out, i + 1];
      }
      out += c;
      i++;
      continue;
    }
    if (c === '"') return [out, i + 1];
    if (c !== "\\") {
      out += c;
      i++;
      continue;
    }
    const e = s[i + 1];
    const simple: Record<string, string> = {
      "0": "\0",
      a: "\x07",
      b: "\b",
      t: "\t",
      "\t": "\t",
      n: "\n",
      v: "\v",
      f: "\f",
      r: "\r",
      e: "\x1b",
      " ": " ",
      '"': '"',
      "/": "/",
      "\\": "\\",
      N: "\x85",
      _: "\xa0",
      L: "\u2028",
      P: "\u2029",
    };
    if (e !== undefined && e in simple) {
      out += simple[e];
      i += 2;
      continue;
    }
    const width = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
    const hex = s.slice(i + 2, i + 2 + width);
    if (!width || !/^[0-9a-fA-F]+$/.test(hex) || hex.length !== width) throw new Unsupported();
    out += String.fromCodePoint(parseInt(hex, 16));
    i += 2 + width;
  }
  throw new Unsupported(); // not closed on this line: a multi-line scalar
}

/** A plain scalar, resolved with the YAML 1.2 core schema. */
function scalar(text: string): unknown {
  if (/^(~|null|Null|NULL)?$/.test(text)) return null;
  if (/^(true|True|TRUE)$/.test(text)) return true;
  if (/^(false|False|FALSE)$/.test(text)) return false;
  if (/^[-+]?[0-9]+$/.test(text)) return Number(text);
  if (/^0o[0-7]+$/.test(text)) return parseInt(text.slice(2), 8);
  if (/^0x[0-9a-fA-F]+$/.test(text)) return parseInt(text.slice(2), 16);
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(text)) return Number(text);
  if (/^[-+]?\.(inf|Inf|INF)$/.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  if (/^\.(nan|NaN|NAN)$/.test(text)) return NaN;
  // Indicators that would change the meaning of a plain scalar are left to the full parser.
  if (/^[[\]{},#&*!|>'"%@`]/.test(text) || /^[-?:](\s|$)/.test(text)) throw new Unsupported();
  return text;
}
