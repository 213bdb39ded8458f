/**
 * Private: the walk from a zod v4 schema (its `_zod.def` tree) to a structural OpenAPI v3
 * schema. Every construct the API server cannot express fails here, naming the field path.
 *
 * @module
 */
import { z, type ZodType } from "../util/zod.ts";
import type { JSONSchemaProps, ValidationRule } from "../core/crd.ts";
import {
  numberSchema,
  re2Pattern,
  sizeChecks,
  stringSchema,
  type ZodNode,
} from "./_schema_checks.ts";
import { child, enumSchema, intersectionSchema, unionSchema } from "./_schema_combine.ts";

type Meta = Record<string, unknown>;

const VALIDATIONS = "x-kubernetes-validations";

/** Why each zod type has no structural form, and what to use instead. */
const UNSUPPORTED: Record<string, string> = {
  transform: "z.transform is not expressible as OpenAPI; use a CEL rule or remove it",
  pipe: "z.pipe is not expressible as OpenAPI; validate with one schema and a CEL rule",
  catch: "z.catch is not expressible as OpenAPI; use .default() instead",
  date:
    "z.date() is not expressible as OpenAPI; use z.iso.datetime() (a string with format date-time)",
  bigint: "z.bigint() is not expressible as OpenAPI; use z.int()",
  tuple:
    "z.tuple() is not expressible as a structural schema; use an object or an array of one type",
  symbol: "z.symbol() is not expressible as OpenAPI",
  undefined: "z.undefined() is not expressible as OpenAPI; use .optional()",
  void: "z.void() is not expressible as OpenAPI; use .optional()",
  null: "z.null() alone is not expressible as OpenAPI; use .nullable() on the value",
  never: "z.never() is not expressible as OpenAPI; remove the field",
  nan: "z.nan() is not expressible as OpenAPI",
  function: "z.function() is not expressible as OpenAPI",
  promise: "z.promise() is not expressible as OpenAPI",
  map: "z.map() is not expressible as OpenAPI; use z.record(z.string(), ...)",
  set: 'z.set() is not expressible as OpenAPI; use listType(z.array(...), "set")',
  file: "z.file() is not expressible as OpenAPI",
  custom:
    "z.custom()/z.instanceof() is not expressible as OpenAPI; use z.unknown() with a CEL rule",
  success: "z.success() is not expressible as OpenAPI",
};

/** Keys that only shape a schema; anything else is a value validation. */
const SHAPE_KEYS = new Set([
  "type",
  "description",
  "title",
  "example",
  "nullable",
  "properties",
  "items",
  "additionalProperties",
  "required",
  "x-kubernetes-preserve-unknown-fields",
]);

function hasValueValidations(s: JSONSchemaProps): boolean {
  if (Object.keys(s).some((k) => !SHAPE_KEYS.has(k))) return true;
  const children = [
    ...Object.values(s.properties ?? {}),
    ...(s.items ? [s.items] : []),
    ...(typeof s.additionalProperties === "object" ? [s.additionalProperties] : []),
  ];
  return children.some(hasValueValidations);
}

function isJson(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJson);
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.values(value as object).every(isJson);
  }
  return false;
}

/** Normalises CEL rules given as strings or objects. */
export function toRules(value: unknown): ValidationRule[] {
  const list = Array.isArray(value) ? value : [value];
  return list.map((r) => (typeof r === "string" ? { rule: r } : { ...(r as ValidationRule) }));
}

/** Converts zod schemas for one subject (e.g. a kind), failing with `TypeError`s naming paths. */
export class SchemaWalker {
  #subject: string | undefined;
  #onPath = new Set<unknown>();

  constructor(subject?: string) {
    this.#subject = subject;
  }

  fail(path: string, why: string): never {
    const subject = this.#subject ? ` for ${this.#subject}` : "";
    throw new TypeError(`Cannot generate CRD schema${subject} at ${path || "the root"}: ${why}`);
  }

  /** Whether an object may omit this field: zod accepts it absent. */
  optional(node: ZodNode): boolean {
    if (node._zod.optin !== undefined) return true;
    const t = node._zod.def.type;
    if (t === "any" || t === "unknown") return true;
    if (t === "nullable" || t === "readonly") return this.optional(node._zod.def.innerType);
    if (t === "lazy") {
      return this.optional((node._zod as unknown as { innerType: ZodNode }).innerType);
    }
    return false;
  }

  /** The structural schema of one zod node at `path`. */
  walk(node: ZodNode, path: string): JSONSchemaProps {
    const fail = (why: string): never => this.fail(path, why);
    const metas: Meta[] = [];
    let nullable = false;
    let fallback: { value: unknown; inner: ZodNode } | undefined;
    let core = node;
    for (;;) {
      const meta = z.globalRegistry.get(core as unknown as ZodType);
      if (meta) metas.unshift(meta as Meta);
      const def = core._zod.def;
      if (def.type === "optional" || def.type === "readonly" || def.type === "nonoptional") {
        core = def.innerType;
      } else if (def.type === "nullable") {
        nullable = true;
        core = def.innerType;
      } else if (def.type === "default" || def.type === "prefault") {
        fallback ??= { value: def.defaultValue, inner: def.innerType };
        core = def.innerType;
      } else if (def.type === "lazy") {
        if (this.#onPath.has(core)) {
          fail(
            "a recursive schema is not expressible as a structural schema; use z.unknown() for the recursive part",
          );
        }
        core = (core._zod as unknown as { innerType: ZodNode }).innerType;
      } else break;
    }
    // Outer wrappers override inner metadata; CEL rules accumulate.
    const meta: Meta = {};
    const rules: ValidationRule[] = [];
    for (const m of metas) {
      for (const [k, v] of Object.entries(m)) {
        if (k === VALIDATIONS) rules.push(...toRules(v));
        else meta[k] = v;
      }
    }
    if (this.#onPath.has(core)) {
      fail(
        "a recursive schema is not expressible as a structural schema; use z.unknown() for the recursive part",
      );
    }
    this.#onPath.add(core);
    let built: { schema: JSONSchemaProps; refinements: number };
    try {
      built = this.#core(core, path, meta);
    } finally {
      this.#onPath.delete(core);
    }
    const out = built.schema;
    if (built.refinements > 0 && rules.length === 0) {
      fail(
        "z.refine()/z.superRefine() is not expressible as OpenAPI; declare the same rule in CEL beside it with cel(schema, rules), or remove it",
      );
    }
    if (typeof meta.description === "string") out.description = meta.description;
    if (typeof meta.title === "string") out.title = meta.title;
    if (meta.example !== undefined) out.example = meta.example;
    if (nullable) out.nullable = true;
    this.#extensions(out, meta, rules, fail);
    if (fallback) {
      const { value, inner } = fallback;
      if (!isJson(value)) fail(`the default ${String(value)} is not a JSON value`);
      const parsed = (inner as unknown as ZodType).safeParse(value);
      if (!parsed.success) {
        fail(
          `the default ${JSON.stringify(value)} does not satisfy the schema: ${
            parsed.error.issues[0]?.message
          }`,
        );
      }
      out.default = structuredClone(value);
    }
    return out;
  }

  #extensions(
    out: JSONSchemaProps,
    meta: Meta,
    rules: ValidationRule[],
    fail: (why: string) => never,
  ) {
    if (rules.length) out[VALIDATIONS] = rules;
    const flag = (k: string) => meta[k] === true;
    if (flag("x-kubernetes-preserve-unknown-fields")) {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    }
    if (flag("x-kubernetes-int-or-string") && !out["x-kubernetes-int-or-string"]) {
      fail("x-kubernetes-int-or-string needs z.union([z.int(), z.string()]); use intOrString()");
    }
    if (flag("x-kubernetes-embedded-resource")) {
      if (out.type !== "object") fail("an embedded resource must be an object");
      out["x-kubernetes-embedded-resource"] = true;
    }
    const mapType = meta["x-kubernetes-map-type"];
    if (mapType !== undefined) {
      if (out.type !== "object") fail("x-kubernetes-map-type applies to objects and records only");
      if (mapType !== "atomic" && mapType !== "granular") {
        fail(`x-kubernetes-map-type "${mapType}" is not "atomic" or "granular"`);
      }
      out["x-kubernetes-map-type"] = mapType;
    }
    const listType = meta["x-kubernetes-list-type"];
    const keys = meta["x-kubernetes-list-map-keys"] as string[] | undefined;
    if (keys !== undefined && listType !== "map") {
      fail('x-kubernetes-list-map-keys needs x-kubernetes-list-type "map"');
    }
    if (listType === undefined) return;
    if (out.type !== "array") fail("x-kubernetes-list-type applies to arrays only");
    const items = out.items!;
    if (listType === "set") {
      const scalar = ["string", "integer", "number", "boolean"].includes(items.type ?? "") ||
        items["x-kubernetes-int-or-string"] === true;
      if (!scalar) fail('a list of type "set" must hold scalars; use listMap(...) for objects');
    } else if (listType === "map") {
      if (items.type !== "object" || !items.properties) {
        fail('a list of type "map" must hold objects');
      }
      if (!keys?.length) fail('a list of type "map" needs at least one key');
      for (const key of keys) {
        const prop = items.properties[key];
        if (!prop) fail(`the list map key "${key}" is not a field of the items`);
        if (!["string", "integer", "number", "boolean"].includes(prop.type ?? "")) {
          fail(`the list map key "${key}" must be a scalar field`);
        }
        if (!items.required?.includes(key) && prop.default === undefined) {
          fail(`the list map key "${key}" must be required or have a default`);
        }
      }
      out["x-kubernetes-list-map-keys"] = [...keys];
    } else if (listType !== "atomic") {
      fail(`x-kubernetes-list-type "${listType}" is not "atomic", "set" or "map"`);
    }
    out["x-kubernetes-list-type"] = listType;
  }

  #core(node: ZodNode, path: string, meta: Meta): { schema: JSONSchemaProps; refinements: number } {
    const fail = (why: string): never => this.fail(path, why);
    const def = node._zod.def;
    const plain = (schema: JSONSchemaProps) => ({ schema, refinements: 0 });
    switch (def.type) {
      case "string":
        return stringSchema(node, fail);
      case "number":
        return numberSchema(node, fail);
      case "boolean":
        return { schema: { type: "boolean" }, refinements: sizeChecks(node, fail).refinements };
      case "any":
      case "unknown":
        return plain({ "x-kubernetes-preserve-unknown-fields": true });
      case "enum":
      case "literal":
        return plain(
          enumSchema([...(node._zod as unknown as { values: Set<unknown> }).values], fail),
        );
      case "template_literal":
        return plain({ type: "string", pattern: re2Pattern(node._zod.pattern!, fail) });
      case "array": {
        const { minItems, maxItems, refinements } = sizeChecks(node, fail);
        const schema: JSONSchemaProps = {
          type: "array",
          items: this.walk(def.element, `${path}[*]`),
        };
        if (minItems !== undefined) schema.minItems = minItems;
        if (maxItems !== undefined) schema.maxItems = maxItems;
        return { schema, refinements };
      }
      case "object":
        return this.#object(node, path, meta["x-kubernetes-embedded-resource"] === true);
      case "record":
        return this.#record(node, path);
      case "union":
        return plain(unionSchema(this, def.options, path));
      case "intersection":
        return plain(intersectionSchema(this, def.left, def.right, path));
      case "pipe": {
        const transform = def.in._zod.def.type === "transform" ||
          def.out._zod.def.type === "transform";
        return fail(UNSUPPORTED[transform ? "transform" : "pipe"]);
      }
      default:
        return fail(UNSUPPORTED[def.type] ?? `z.${def.type}() is not expressible as OpenAPI`);
    }
  }

  #object(
    node: ZodNode,
    path: string,
    embedded: boolean,
  ): { schema: JSONSchemaProps; refinements: number } {
    const fail = (why: string): never => this.fail(path, why);
    const def = node._zod.def;
    const shape = def.shape as Record<string, ZodNode>;
    if (Object.getOwnPropertySymbols(shape).length) {
      fail("symbol keys are not expressible as OpenAPI");
    }
    const out: JSONSchemaProps = { type: "object" };
    const properties: Record<string, JSONSchemaProps> = {};
    const required: string[] = [];
    for (const key of Object.keys(shape)) {
      const at = child(path, key);
      properties[key] = embedded && key === "metadata"
        ? this.#embeddedMetadata(this.walk(shape[key], at), at)
        : this.walk(shape[key], at);
      if (!this.optional(shape[key])) required.push(key);
    }
    const catchall = def.catchall?._zod.def.type as string | undefined;
    if (catchall === "unknown" || catchall === "any") {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    } else if (catchall !== undefined && catchall !== "never") {
      if (Object.keys(shape).length) {
        fail(
          "an object with both fields and a typed .catchall() is not expressible as a structural schema; use z.record() for the open part",
        );
      }
      out.additionalProperties = this.walk(def.catchall, `${path}.*`);
    }
    if (Object.keys(properties).length) out.properties = properties;
    if (required.length) out.required = required;
    return { schema: out, refinements: sizeChecks(node, fail).refinements };
  }

  /** Embedded resources take `metadata` as the server's ObjectMeta: only name and generateName may be narrowed. */
  #embeddedMetadata(schema: JSONSchemaProps, path: string): JSONSchemaProps {
    const out: JSONSchemaProps = { type: "object" };
    if (schema.description) out.description = schema.description;
    for (const [key, prop] of Object.entries(schema.properties ?? {})) {
      if (!hasValueValidations(prop)) continue;
      if (key !== "name" && key !== "generateName") {
        this.fail(
          `${path}.${key}`,
          "only metadata.name and metadata.generateName can be constrained in an embedded resource; use a CEL rule on the resource",
        );
      }
      (out.properties ??= {})[key] = prop;
    }
    return out;
  }

  #record(node: ZodNode, path: string): { schema: JSONSchemaProps; refinements: number } {
    const fail = (why: string): never => this.fail(path, why);
    const def = node._zod.def;
    const key = def.keyType as ZodNode;
    if (key._zod.def.type !== "string") {
      fail("z.record() keys must be z.string(); for a fixed set of keys use z.object()");
    }
    // Constrained keys (e.g. a regex) have no OpenAPI form; they count as refinements so a CEL rule beside them is required.
    const keyChecks = stringSchema(key, fail);
    const constrained = Object.keys(keyChecks.schema).length > 1 ? 1 : 0;
    const schema: JSONSchemaProps = {
      type: "object",
      additionalProperties: this.walk(def.valueType, `${path}.*`),
    };
    return {
      schema,
      refinements: sizeChecks(node, fail).refinements + keyChecks.refinements + constrained,
    };
  }
}
