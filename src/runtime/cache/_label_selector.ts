// Client-side label selector matching, the same syntax the API server accepts in
// `?labelSelector=`: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`.

/** One parsed requirement of a label selector. */
interface Requirement {
  key: string;
  op: "=" | "!=" | "in" | "notin" | "exists" | "!exists";
  values: string[];
}

/** A compiled label selector: returns whether a label set matches. */
export type LabelMatcher = (labels: Record<string, string> | undefined) => boolean;

const cache = new Map<string, LabelMatcher>();

/**
 * Compiles a label selector given as a string or as exact `key: value` pairs.
 *
 * @throws {TypeError} When the string is not a valid label selector.
 */
export function compileLabelSelector(selector: string | Record<string, string>): LabelMatcher {
  if (typeof selector !== "string") {
    const pairs = Object.entries(selector);
    return (labels) => pairs.every(([k, v]) => labels?.[k] === v);
  }
  let matcher = cache.get(selector);
  if (matcher) return matcher;
  const reqs = parse(selector);
  matcher = (labels) => reqs.every((r) => matches(r, labels ?? {}));
  if (cache.size > 256) cache.clear();
  cache.set(selector, matcher);
  return matcher;
}

function matches(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  switch (r.op) {
    case "=":
      return has && v === r.values[0];
    case "!=":
      return !has || v !== r.values[0];
    case "in":
      return has && r.values.includes(v);
    case "notin":
      return !has || !r.values.includes(v);
    case "exists":
      return has;
    case "!exists":
      return !has;
  }
}

// Splits on commas that are not inside parentheses.
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "(") depth++;
    else if (s[i] === ")") depth--;
    else if (s[i] === "," && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}

const KEY = String.raw`[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?`;
const SET_RE = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s*\(([^()]*)\)$`);
const EQ_RE = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)$`);
const EXISTS_RE = new RegExp(String.raw`^(!?)\s*(${KEY})$`);

function parse(selector: string): Requirement[] {
  return splitTopLevel(selector).map((part): Requirement => {
    let m = SET_RE.exec(part);
    if (m) {
      const values = m[4].split(",").map((v) => v.trim()).filter((v) => v !== "");
      return { key: m[1], op: m[3] as "in" | "notin", values };
    }
    m = EQ_RE.exec(part);
    if (m) return { key: m[1], op: m[3] === "!=" ? "!=" : "=", values: [m[4]] };
    m = EXISTS_RE.exec(part);
    if (m) return { key: m[2], op: m[1] ? "!exists" : "exists", values: [] };
    throw new TypeError(`Cannot parse label selector "${selector}": invalid requirement "${part}"`);
  });
}
