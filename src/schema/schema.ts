/**
 * Zod (v4) schemas → *structural* OpenAPI v3 schemas, as the Kubernetes API server requires
 * for CustomResourceDefinitions (apiextensions.k8s.io/v1), plus the helpers that declare what
 * zod has no words for: int-or-string, embedded resources, list and map types, CEL rules.
 *
 * The helpers only attach metadata with zod's `.meta()`, under the OpenAPI extension names
 * (`x-kubernetes-validations`, `x-kubernetes-list-type`, ...), so
 * `schema.meta({ "x-kubernetes-list-type": "set" })` works as well as `listType(schema, "set")`.
 *
 * The result types, `JSONSchemaProps` and `ValidationRule`, live in `crd.ts` with the rest of
 * the CustomResourceDefinition object.
 *
 * Guarantees: a construct the API server cannot express (transforms, refinements without a
 * CEL rule beside them, unions of objects, tuples, dates, ...) throws a `TypeError` naming the
 * field path; the result is never a silently weaker schema.
 *
 * Caveats: `parse` with the zod schema does not evaluate CEL rules; the API server does. The
 * uniqueness of `set` and `map` list items is checked by `parse` only when declared with
 * {@link listType} or {@link listMap}, not with a bare `.meta(...)`. Zod
 * formats become OpenAPI formats (`z.email()` → `format: email`), which the server checks with
 * its own, slightly different, definitions.
 *
 * @module
 */
import { z } from "../util/zod.ts";
import { SchemaWalker, toRules } from "./_schema_walk.ts";
import { listTypeChecks, type ZodNode } from "./_schema_checks.ts";
import type { JSONSchemaProps, ValidationRule } from "../core/crd.ts";
import type {
  ZodArray,
  ZodInt,
  ZodLooseObject,
  ZodObject,
  ZodOptional,
  ZodRecord,
  ZodString,
  ZodType,
  ZodUnion,
} from "../util/zod.ts";

/** Options for {@link toStructuralSchema}. */
export interface StructuralSchemaOptions {
  /**
   * What the schema belongs to, named in errors, e.g. the kind.
   * @default no name
   */
  name?: string;
  /**
   * Path of the schema inside the object, prefixed to field paths in errors, e.g. `spec`.
   * @default ""
   */
  path?: string;
}

/**
 * Converts a zod v4 schema to the structural OpenAPI v3 schema a CRD carries.
 *
 * Mapping: `.describe()`/`.meta({ description })` → `description`; `.default()` → `default`
 * (checked against the schema); `z.enum`/`z.literal` (and unions of them) → `enum`; number
 * checks → `minimum`/`maximum`/`exclusive*`/`multipleOf`; `z.int()` → `integer`/`int64`,
 * `z.int32()` → `int32`; string lengths, `.regex()` → `pattern` (RE2); `z.email()`,
 * `z.uuid()`, `z.url()` → `uri`, `z.iso.datetime()` → `date-time`, ...; optional/defaulted
 * fields leave `required`; `.nullable()` → `nullable`; arrays with `minItems`/`maxItems`;
 * `z.record(z.string(), X)` → `additionalProperties`; `z.looseObject`, `z.unknown()`,
 * `z.any()` → `x-kubernetes-preserve-unknown-fields`; `z.union([z.int(), z.string()])` →
 * int-or-string; the helpers in this module for the rest.
 *
 * @param schema The zod schema.
 * @param options Name and path used in error messages.
 * @returns The structural schema, a fresh plain object.
 * @throws {TypeError} When a construct has no structural OpenAPI form, naming the field path.
 *
 * @example Convert a schema
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { toStructuralSchema } from "./schema.ts";
 * const s = toStructuralSchema(z.object({ replicas: z.int().min(0).default(1).describe("Pods") }));
 * const r = s.properties!.replicas;
 * if (r.type !== "integer" || r.minimum !== 0 || r.default !== 1 || r.description !== "Pods") {
 *   throw new Error("unexpected schema");
 * }
 * ```
 *
 * @example Unsupported constructs fail with the path
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { toStructuralSchema } from "./schema.ts";
 * try {
 *   toStructuralSchema(z.object({ port: z.string().transform(Number) }), { name: "Myapp", path: "spec" });
 *   throw new Error("expected a TypeError");
 * } catch (e) {
 *   if (!(e as Error).message.startsWith("Cannot generate CRD schema for Myapp at spec.port:")) throw e;
 * }
 * ```
 */
export function toStructuralSchema(
  schema: ZodType,
  options: StructuralSchemaOptions = {},
): JSONSchemaProps {
  return new SchemaWalker(options.name).walk(schema as unknown as ZodNode, options.path ?? "");
}

/**
 * Declares CEL rules (`x-kubernetes-validations`) on a schema; the API server evaluates them,
 * with `self` bound to the value. Rules accumulate when applied twice. A `.refine()` on the
 * same schema is accepted only with a CEL rule beside it, which should say the same thing.
 *
 * @param schema The schema the rules constrain.
 * @param rules One rule or several; a string is shorthand for `{ rule }`.
 * @returns A copy of `schema` carrying the rules.
 *
 * @example Cross-field rule
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { cel, toStructuralSchema } from "./schema.ts";
 * const range = cel(z.object({ min: z.int(), max: z.int() }), {
 *   rule: "self.min <= self.max",
 *   message: "min must not exceed max",
 * });
 * const s = toStructuralSchema(range);
 * if (s["x-kubernetes-validations"]?.[0].rule !== "self.min <= self.max") throw new Error();
 * ```
 */
export function cel<S extends ZodType>(
  schema: S,
  rules: ValidationRule | string | readonly (ValidationRule | string)[],
): S {
  const own = (z.globalRegistry.get(schema)?.["x-kubernetes-validations"] ?? []) as unknown[];
  return schema.meta({ "x-kubernetes-validations": [...toRules(own), ...toRules(rules)] }) as S;
}

/**
 * A value that is an integer or a string, like Kubernetes' `IntOrString` (`maxUnavailable:
 * 1` or `"25%"`): `x-kubernetes-int-or-string: true`. The same as
 * `z.union([z.int(), z.string()])`, which is recognised too, also with checks on either side.
 *
 * @returns A zod schema for `number | string`.
 *
 * @example A port by number or name
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { intOrString, toStructuralSchema } from "./schema.ts";
 * const s = toStructuralSchema(intOrString().describe("Port number or name"));
 * if (s["x-kubernetes-int-or-string"] !== true) throw new Error();
 * intOrString().parse("http");
 * intOrString().parse(8080);
 * ```
 */
export function intOrString(): ZodUnion<readonly [ZodInt, ZodString]> {
  return z.union([z.int(), z.string()]).meta({ "x-kubernetes-int-or-string": true });
}

/**
 * The schema {@link embeddedResource} returns when given none: a loose object (unknown fields
 * kept) with `apiVersion`, `kind` and optional `metadata` (`name`, `namespace`, `labels`,
 * `annotations`, also loose).
 */
export type EmbeddedObjectSchema = ZodLooseObject<{
  apiVersion: ZodString;
  kind: ZodString;
  metadata: ZodOptional<
    ZodLooseObject<{
      name: ZodOptional<ZodString>;
      namespace: ZodOptional<ZodString>;
      labels: ZodOptional<ZodRecord<ZodString, ZodString>>;
      annotations: ZodOptional<ZodRecord<ZodString, ZodString>>;
    }>
  >;
}>;

/**
 * A whole Kubernetes object embedded in a field (like a Pod template):
 * `x-kubernetes-embedded-resource: true`. The server checks its `apiVersion`, `kind` and
 * `metadata`. Without a schema, any object is kept as is; with one, it is narrowed (only
 * `metadata.name` and `metadata.generateName` may carry constraints).
 *
 * @param schema The object's schema; when omitted, a loose object with `apiVersion`, `kind`
 * and optional `metadata`.
 * @returns A copy of `schema` marked as an embedded resource.
 *
 * @example Any embedded object
 * ```ts
 * import { embeddedResource, toStructuralSchema } from "./schema.ts";
 * const s = toStructuralSchema(embeddedResource());
 * if (!s["x-kubernetes-embedded-resource"] || !s["x-kubernetes-preserve-unknown-fields"]) throw new Error();
 * ```
 */
export function embeddedResource(): EmbeddedObjectSchema;
/**
 * A whole Kubernetes object embedded in a field, with a declared schema:
 * `x-kubernetes-embedded-resource: true`. The server checks its `apiVersion`, `kind` and
 * `metadata`; only `metadata.name` and `metadata.generateName` may carry constraints.
 *
 * @param schema The object's schema.
 * @returns A copy of `schema` marked as an embedded resource.
 *
 * @example A Pod template kept as declared
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { embeddedResource, toStructuralSchema } from "./schema.ts";
 * const pod = embeddedResource(z.object({ apiVersion: z.literal("v1"), kind: z.literal("Pod") }));
 * if (!toStructuralSchema(pod)["x-kubernetes-embedded-resource"]) throw new Error();
 * ```
 */
export function embeddedResource<S extends ZodObject>(schema: S): S;
export function embeddedResource(schema?: ZodObject): ZodObject {
  const s = schema ?? z.looseObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z.looseObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
      labels: z.record(z.string(), z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    }).optional(),
  });
  return s.meta({ "x-kubernetes-embedded-resource": true });
}

/**
 * A zod check that the items of a list are unique by `identity`, reporting each repeat at its
 * index with the API server's words ("Duplicate value: ..."). Items that are not what
 * `identity` reads (`undefined`) are left to the item schema's own errors.
 */
function uniqueItems(identity: (item: unknown) => unknown) {
  const check = z.superRefine((items: unknown[], ctx) => {
    const seen = new Set<string>();
    items.forEach((item, i) => {
      const id = identity(item);
      if (id === undefined) return;
      const text = JSON.stringify(id);
      if (seen.has(text)) {
        ctx.addIssue({ code: "custom", path: [i], message: `Duplicate value: ${text}` });
      }
      seen.add(text);
    });
  });
  listTypeChecks.add(check._zod.def);
  return check;
}

/**
 * How server-side apply merges a list: `atomic` (replaced whole) or `set` (scalars, merged
 * by value; items must be unique). For lists of objects keyed by fields, see {@link listMap}.
 * A `set` is checked by `parse` as the API server checks it: a repeated item fails at its
 * index.
 *
 * @param schema An array schema.
 * @param type `"atomic"` or `"set"`.
 * @returns A copy of `schema` carrying `x-kubernetes-list-type` (and, for `set`, the
 * uniqueness check).
 *
 * @example A set of strings
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { listType, toStructuralSchema } from "./schema.ts";
 * const tags = listType(z.array(z.string()), "set");
 * if (toStructuralSchema(tags)["x-kubernetes-list-type"] !== "set") throw new Error();
 * const dup = tags.safeParse(["a", "b", "a"]);
 * if (dup.success || dup.error.issues[0].path[0] !== 2) throw new Error("expected [2] to fail");
 * ```
 */
export function listType<S extends ZodArray>(schema: S, type: "atomic" | "set"): S {
  const checked = type === "set" ? schema.check(uniqueItems((item) => item)) : schema;
  return checked.meta({ "x-kubernetes-list-type": type }) as S;
}

/**
 * A list of objects merged by key, like a Pod's `containers` by `name`:
 * `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`. Each key must be a scalar
 * field of the items that is required or has a default. As on the API server, `parse` fails
 * for an item whose keys (after defaults) repeat an earlier item's, at the later index.
 *
 * @param schema An array schema of objects.
 * @param keys The fields identifying an item.
 * @returns A copy of `schema` carrying the list type, keys and the uniqueness check.
 *
 * @example Ports keyed by name
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { listMap, toStructuralSchema } from "./schema.ts";
 * const ports = listMap(z.array(z.object({ name: z.string(), port: z.int() })), ["name"]);
 * const s = toStructuralSchema(ports);
 * if (s["x-kubernetes-list-map-keys"]?.[0] !== "name") throw new Error();
 * if (ports.safeParse([{ name: "web", port: 80 }, { name: "web", port: 81 }]).success) {
 *   throw new Error("expected the repeated key to fail");
 * }
 * ```
 */
export function listMap<S extends ZodArray>(schema: S, keys: readonly string[]): S {
  const keyOf = (item: unknown) =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.fromEntries(keys.map((k) => [k, (item as Record<string, unknown>)[k]]))
      : undefined;
  return schema.check(uniqueItems(keyOf)).meta({
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": [...keys],
  }) as S;
}

/**
 * How server-side apply merges an object or record: `granular` (field by field, the default)
 * or `atomic` (replaced whole): `x-kubernetes-map-type`.
 *
 * @param schema An object or record schema.
 * @param type `"atomic"` or `"granular"`.
 * @returns A copy of `schema` carrying `x-kubernetes-map-type`.
 *
 * @example An atomic selector
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { mapType, toStructuralSchema } from "./schema.ts";
 * const s = toStructuralSchema(mapType(z.record(z.string(), z.string()), "atomic"));
 * if (s["x-kubernetes-map-type"] !== "atomic") throw new Error();
 * ```
 */
export function mapType<S extends ZodObject | ZodRecord>(
  schema: S,
  type: "atomic" | "granular",
): S {
  return schema.meta({ "x-kubernetes-map-type": type }) as S;
}
