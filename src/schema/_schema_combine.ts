/**
 * Private: zod unions, intersections and enums → structural schemas, or the reason they
 * have none.
 *
 * @module
 */
import type { JSONSchemaProps } from "../core/crd.ts";
import type { ZodNode } from "./_schema_checks.ts";

/** What these functions need from the walker. */
export interface Walker {
  walk(node: ZodNode, path: string): JSONSchemaProps;
  fail(path: string, why: string): never;
}

const NULL_ALONE = "z.null() alone is not expressible as OpenAPI; use .nullable() on the value";
const VALIDATIONS = "x-kubernetes-validations";

/** Whether two schemas are the same JSON. */
export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The path of a field: `a.b`, or `a["x-y"]` when the key is not an identifier. */
export function child(path: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
    ? (path ? `${path}.${key}` : key)
    : `${path}[${JSON.stringify(key)}]`;
}

/** `z.enum`/`z.literal` values (and unions of them) → `enum`, `null` → `nullable`. */
export function enumSchema(values: unknown[], fail: (why: string) => never): JSONSchemaProps {
  const nonNull = values.filter((v) => v !== null);
  if (nonNull.length === 0) fail(NULL_ALONE);
  const types = new Set(nonNull.map((v) => typeof v));
  if (types.size !== 1) {
    fail(`an enum mixing ${[...types].join(" and ")} values is not expressible as OpenAPI`);
  }
  const [t] = types;
  let type: JSONSchemaProps["type"];
  if (t === "string" || t === "boolean") type = t;
  else if (t === "number") {
    type = nonNull.every((v) => Number.isInteger(v)) ? "integer" : "number";
  } else fail(`a ${t} literal is not expressible as OpenAPI`);
  const out: JSONSchemaProps = { type, enum: nonNull };
  if (nonNull.length < values.length) out.nullable = true;
  return out;
}

/** `z.union`: literals merge into an enum, `null` makes it nullable, int|string is int-or-string. */
export function unionSchema(w: Walker, options: ZodNode[], path: string): JSONSchemaProps {
  const fail = (why: string): never => w.fail(path, why);
  const isNull = (o: ZodNode) =>
    o._zod.def.type === "null" ||
    (o._zod.def.type === "literal" && o._zod.def.values.every((v: unknown) => v === null));
  const rest = options.filter((o) => !isNull(o));
  const nullable = rest.length < options.length;
  const schemas = rest.map((o) => w.walk(o, path));
  let out: JSONSchemaProps;
  const scalarEnum = (s: JSONSchemaProps) =>
    Array.isArray(s.enum) &&
    Object.keys(s).every((k) => ["type", "enum", "nullable"].includes(k));
  if (schemas.length === 0) return fail(NULL_ALONE);
  if (schemas.length === 1) {
    out = schemas[0];
  } else if (schemas.every(scalarEnum)) {
    out = enumSchema(schemas.flatMap((s) => [...s.enum!, ...(s.nullable ? [null] : [])]), fail);
  } else {
    out = intOrStringSchema(schemas, fail);
  }
  if (nullable) out.nullable = true;
  return out;
}

function intOrStringSchema(
  schemas: JSONSchemaProps[],
  fail: (why: string) => never,
): JSONSchemaProps {
  const int = schemas.find((s) => s.type === "integer" && !s.enum);
  const str = schemas.find((s) => s.type === "string" && !s.enum);
  if (schemas.length !== 2 || !int || !str) {
    const kinds = schemas.map((s) => s.type ?? "unknown");
    if (kinds.every((k) => k === "object")) {
      fail(
        "a union of objects is not expressible as a structural schema; use one object with optional fields and a CEL rule choosing between them",
      );
    }
    if (kinds.includes("string") && kinds.includes("number")) {
      fail(
        "a union of string and number is only expressible as int-or-string; use intOrString() or z.union([z.int(), z.string()])",
      );
    }
    fail(`a union of ${kinds.join(" and ")} is not expressible as a structural schema`);
  }
  // Number validations only constrain numbers and string ones only strings, so they can sit beside the int-or-string marker.
  const out: JSONSchemaProps = {
    "x-kubernetes-int-or-string": true,
    anyOf: [{ type: "integer" }, { type: "string" }],
  };
  const hoist = (s: JSONSchemaProps, keys: (keyof JSONSchemaProps)[]) => {
    for (const [k, v] of Object.entries(s)) {
      if (k === "type" || (k === "format" && s.type === "integer")) continue;
      if (!keys.includes(k as keyof JSONSchemaProps)) {
        fail(`"${k}" inside an int-or-string branch is not expressible; put it on the union`);
      }
      (out as Record<string, unknown>)[k] = v;
    }
  };
  hoist(int, ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]);
  hoist(str, ["minLength", "maxLength", "pattern", "format"]);
  return out;
}

/** `z.intersection`: identical sides, or objects whose fields merge. */
export function intersectionSchema(
  w: Walker,
  left: ZodNode,
  right: ZodNode,
  path: string,
): JSONSchemaProps {
  const a = w.walk(left, path);
  const b = w.walk(right, path);
  if (same(a, b)) return a;
  const mergeable = (s: JSONSchemaProps) =>
    s.type === "object" && s.additionalProperties === undefined && !s.nullable &&
    s.default === undefined;
  if (!mergeable(a) || !mergeable(b)) {
    w.fail(
      path,
      `an intersection of ${a.type ?? "unknown"} and ${
        b.type ?? "unknown"
      } cannot be merged into one structural schema`,
    );
  }
  const out: JSONSchemaProps = { type: "object" };
  const properties = { ...a.properties };
  for (const [key, prop] of Object.entries(b.properties ?? {})) {
    if (properties[key] && !same(properties[key], prop)) {
      w.fail(
        child(path, key),
        "both sides of an intersection define this field differently; merge them into one schema",
      );
    }
    properties[key] = prop;
  }
  if (Object.keys(properties).length) out.properties = properties;
  const required = [...new Set([...(a.required ?? []), ...(b.required ?? [])])];
  if (required.length) out.required = required;
  const rules = [...(a[VALIDATIONS] ?? []), ...(b[VALIDATIONS] ?? [])];
  if (rules.length) out[VALIDATIONS] = rules;
  if (a["x-kubernetes-preserve-unknown-fields"] || b["x-kubernetes-preserve-unknown-fields"]) {
    out["x-kubernetes-preserve-unknown-fields"] = true;
  }
  return out;
}
