/**
 * Private: turns zod v4 string and number checks into OpenAPI value validations the
 * Kubernetes API server understands, or reports why they cannot be.
 *
 * @module
 */
import type { JSONSchemaProps } from "../core/crd.ts";

/** A zod internal node, read through `_zod`; zod does not type these publicly. */
// deno-lint-ignore no-explicit-any
export type ZodNode = { _zod: { def: any; traits: Set<string>; optin?: string; pattern?: RegExp } };

/** A check def as zod stores it (`check._zod.def`). */
// deno-lint-ignore no-explicit-any
type CheckDef = { check: string; [key: string]: any };

/** The checks of a node: a format schema (`z.email()`, `z.int()`) is its own first check. */
export function checksOf(node: ZodNode): CheckDef[] {
  const list: ZodNode[] = node._zod.traits.has("$ZodCheck")
    ? [node, ...(node._zod.def.checks ?? [])]
    : (node._zod.def.checks ?? []);
  return list.map((c) => c._zod.def as CheckDef);
}

/** Zod string formats the API server knows under its own name (kube-openapi's strfmt). */
const FORMATS: Record<string, string> = {
  email: "email",
  uuid: "uuid",
  guid: "uuid",
  url: "uri",
  datetime: "date-time",
  date: "date",
  ipv4: "ipv4",
  ipv6: "ipv6",
  cidrv4: "cidr",
  cidrv6: "cidr",
  mac: "mac",
  base64: "byte",
  hostname: "hostname",
};

/**
 * Why a JavaScript regular expression cannot be a Kubernetes `pattern` (Go's RE2 syntax), or
 * undefined when it can.
 */
export function re2Problem(source: string): string | undefined {
  if (/\(\?<?[=!]/.test(source)) return "lookaround assertions";
  if (/\\[1-9]|\\k</.test(source)) return "backreferences";
  return undefined;
}

/** Converts a JavaScript regex to RE2 source, carrying the flags RE2 has inline forms for. */
export function re2Pattern(re: RegExp, fail: (why: string) => never): string {
  const problem = re2Problem(re.source);
  if (problem) {
    fail(
      `regex /${re.source}/ uses ${problem}, which the API server's RE2 patterns cannot express; use a CEL rule`,
    );
  }
  const inline = [...re.flags].filter((f) => f === "i" || f === "m" || f === "s").join("");
  return inline ? `(?${inline})${re.source}` : re.source;
}

function addPattern(out: JSONSchemaProps, pattern: string) {
  if (out.pattern === undefined) out.pattern = pattern;
  else if (out.pattern !== pattern) (out.allOf ??= []).push({ pattern });
}

/**
 * Value validations for a `z.string()` (or string format) node. `custom` checks (refinements)
 * are counted and returned so the caller can require a CEL rule beside them.
 */
export function stringSchema(
  node: ZodNode,
  fail: (why: string) => never,
): { schema: JSONSchemaProps; refinements: number } {
  const out: JSONSchemaProps = { type: "string" };
  let refinements = 0;
  for (const c of checksOf(node)) {
    switch (c.check) {
      case "min_length":
        out.minLength = Math.max(out.minLength ?? 0, c.minimum);
        break;
      case "max_length":
        out.maxLength = Math.min(out.maxLength ?? Infinity, c.maximum);
        break;
      case "length_equals":
        out.minLength = out.maxLength = c.length;
        break;
      case "string_format": {
        const known = FORMATS[c.format];
        // A local or offset-free date-time is not RFC 3339; keep zod's own pattern for it.
        const exact = c.format !== "datetime" || (!c.local && c.offset !== true);
        if (known && exact) out.format = known;
        else if (c.pattern instanceof RegExp) addPattern(out, re2Pattern(c.pattern, fail));
        else fail(`z.${c.format}() has no OpenAPI format or pattern; use a CEL rule`);
        break;
      }
      case "overwrite":
        fail(
          "a string overwrite (.trim(), .toLowerCase(), .normalize(), ...) is not expressible as OpenAPI; remove it and validate with .regex() or a CEL rule",
        );
        break;
      case "custom":
        refinements++;
        break;
      default:
        fail(`the string check "${c.check}" is not expressible as OpenAPI`);
    }
  }
  return { schema: out, refinements };
}

/** `number_format` → OpenAPI type and format, plus the range zod enforces beyond the format. */
const NUMBER_FORMATS: Record<
  string,
  { type: "integer" | "number"; format: string; min?: number; max?: number }
> = {
  safeint: { type: "integer", format: "int64" },
  int32: { type: "integer", format: "int32" },
  uint32: { type: "integer", format: "int64", min: 0, max: 4294967295 },
  float32: { type: "number", format: "float" },
  float64: { type: "number", format: "double" },
};

/** Value validations for a `z.number()` node; see {@link stringSchema} for `refinements`. */
export function numberSchema(
  node: ZodNode,
  fail: (why: string) => never,
): { schema: JSONSchemaProps; refinements: number } {
  const out: JSONSchemaProps = { type: "number" };
  let refinements = 0;
  let min: { value: number; exclusive: boolean } | undefined;
  let max: { value: number; exclusive: boolean } | undefined;
  const divisors: number[] = [];
  const narrowMin = (value: number, exclusive: boolean) => {
    if (!min || value > min.value || (value === min.value && exclusive)) min = { value, exclusive };
  };
  const narrowMax = (value: number, exclusive: boolean) => {
    if (!max || value < max.value || (value === max.value && exclusive)) max = { value, exclusive };
  };
  for (const c of checksOf(node)) {
    switch (c.check) {
      case "number_format": {
        const f = NUMBER_FORMATS[c.format];
        if (!f) fail(`the number format "${c.format}" is not expressible as OpenAPI`);
        out.type = f.type;
        out.format = f.format;
        if (f.min !== undefined) narrowMin(f.min, false);
        if (f.max !== undefined) narrowMax(f.max, false);
        break;
      }
      case "greater_than":
        narrowMin(c.value, !c.inclusive);
        break;
      case "less_than":
        narrowMax(c.value, !c.inclusive);
        break;
      case "multiple_of":
        if (!Number.isFinite(c.value) || c.value === 0) {
          fail(`multipleOf(${c.value}) is not expressible as OpenAPI`);
        }
        if (!divisors.includes(Math.abs(c.value))) divisors.push(Math.abs(c.value));
        break;
      case "custom":
        refinements++;
        break;
      default:
        fail(`the number check "${c.check}" is not expressible as OpenAPI`);
    }
  }
  if (min) {
    out.minimum = min.value;
    if (min.exclusive) out.exclusiveMinimum = true;
  }
  if (max) {
    out.maximum = max.value;
    if (max.exclusive) out.exclusiveMaximum = true;
  }
  const [first, ...rest] = divisors;
  if (first !== undefined) out.multipleOf = first;
  if (rest.length) out.allOf = rest.map((multipleOf) => ({ multipleOf }));
  return { schema: out, refinements };
}

/**
 * Defs of the custom checks `listType(..., "set")` and `listMap` add: they enforce in zod what
 * `x-kubernetes-list-type` already tells the API server (unique items), so they are not
 * refinements that need a CEL rule beside them.
 */
export const listTypeChecks: WeakSet<object> = new WeakSet();

/** `minItems`/`maxItems` (arrays) from length checks; see {@link stringSchema} for `refinements`. */
export function sizeChecks(
  node: ZodNode,
  fail: (why: string) => never,
): { minItems?: number; maxItems?: number; refinements: number } {
  const out: { minItems?: number; maxItems?: number; refinements: number } = { refinements: 0 };
  for (const c of checksOf(node)) {
    if (c.check === "min_length") out.minItems = Math.max(out.minItems ?? 0, c.minimum);
    else if (c.check === "max_length") out.maxItems = Math.min(out.maxItems ?? Infinity, c.maximum);
    else if (c.check === "length_equals") out.minItems = out.maxItems = c.length;
    else if (c.check === "custom") {
      if (!listTypeChecks.has(c)) out.refinements++;
    } else fail(`the check "${c.check}" is not expressible as OpenAPI`);
  }
  return out;
}
