/**
 * Zod schemas of Kubernetes' built-in types (`PodTemplateSpec`, `JobTemplateSpec`,
 * `ResourceRequirements`, `Container`, … every type `core.ts` exports), for embedding in a
 * custom resource as kubebuilder embeds them: structural, with the API's descriptions, list-map
 * keys (`containers` by `name`, `ports` by `containerPort` and `protocol`), map types and
 * int-or-string (`Quantity`, `IntOrString`) where the API has them. So a typo such as
 * `templte:` inside an embedded Job spec is refused by the API server instead of pruned or kept.
 *
 * Flow: the schemas are generated with the TypeScript kinds from the API server's
 * `/openapi/v3` (`deno task gen:kinds`) into one JSON string; the first `builtinSchema` call
 * parses it, and each type's zod schema is built on first use and cached. An operator that
 * never calls it pays nothing but this module's string literal, and only if it imports it.
 *
 * Guarantees: the schema's output type is the generated TypeScript type of the same name;
 * `toStructuralSchema` of it is a structural schema the API server accepts in a CRD.
 *
 * Caveats: `metadata` inside a template (`PodTemplateSpec.metadata`) keeps only what the API
 * server lets an embedded object's metadata hold and controllers use — name, generateName,
 * namespace, labels, annotations, finalizers — as controller-gen's `generateEmbeddedObjectMeta`;
 * enums are left open (strings), as the API server's own OpenAPI marks them advisory. A CRD that
 * embeds a PodSpec is large (the descriptions are most of it): pass `{ descriptions: false }`
 * to leave them out, as controller-gen's `crd:maxDescLen=0`.
 *
 * @module
 */
import { z, type ZodType, type ZodTypeOf } from "../util/zod.ts";
import { intOrString, listMap, listType, mapType } from "./schema.ts";
import { BUILTIN_OPENAPI, type BuiltinTypes } from "./_builtin_openapi.ts";

export type { BuiltinTypes };

/** The public name of a built-in type, e.g. `"PodTemplateSpec"`. */
export type BuiltinTypeName = keyof BuiltinTypes;

/** Options of {@linkcode builtinSchema}. */
export interface BuiltinSchemaOptions {
  /**
   * Keep the API's field descriptions (they are most of a CRD's size).
   * @default true
   */
  descriptions?: boolean;
}

type OpenApi = {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, OpenApi>;
  required?: string[];
  items?: OpenApi;
  additionalProperties?: OpenApi | boolean;
  default?: unknown;
  allOf?: OpenApi[];
  $ref?: string;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: "atomic" | "granular";
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
};

let data: Record<string, OpenApi> | undefined;
const cache = new Map<string, ZodType>();

/**
 * The zod schema of a built-in Kubernetes type, built on first use.
 *
 * @typeParam K The type's public name.
 * @param name The type's public name as `core.ts` exports it, e.g. `"PodTemplateSpec"`.
 * @param options Whether to keep descriptions.
 * @returns A zod schema whose output is that type.
 * @throws {TypeError} When no built-in type has that name.
 *
 * @example Embed a Pod template
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { defineResource } from "./define_resource.ts";
 * import { builtinSchema } from "./builtin.ts";
 * const Runner = defineResource({
 *   group: "example.com", version: "v1", kind: "Runner",
 *   spec: z.object({ template: builtinSchema("PodTemplateSpec") }),
 * });
 * const template = Runner.crd().spec.versions[0].schema.openAPIV3Schema.properties!.spec
 *   .properties!.template;
 * const containers = template.properties!.spec.properties!.containers;
 * if (containers["x-kubernetes-list-map-keys"]?.[0] !== "name") throw new Error();
 * ```
 */
export function builtinSchema<K extends BuiltinTypeName>(
  name: K,
  options: BuiltinSchemaOptions = {},
): ZodTypeOf<BuiltinTypes[K]> {
  data ??= JSON.parse(BUILTIN_OPENAPI) as Record<string, OpenApi>;
  if (!Object.hasOwn(data, name)) {
    throw new TypeError(
      `Cannot build the schema of "${name}": it is not a built-in Kubernetes type (see core.ts)`,
    );
  }
  return build(name, options.descriptions ?? true, []) as ZodTypeOf<BuiltinTypes[K]>;
}

/** `keys`: the list-map keys of the list this type is an item of, whose defaults are kept. */
function build(
  name: string,
  descriptions: boolean,
  path: readonly string[],
  keys: readonly string[] = [],
): ZodType {
  const key = `${descriptions ? "d" : "-"}${name}[${keys.join(",")}]`;
  const hit = cache.get(key);
  if (hit) return hit;
  if (path.includes(name)) {
    throw new TypeError(
      `Cannot build the schema of "${path[0]}": ${
        [...path, name].join(" → ")
      } is recursive, which a CRD cannot express`,
    );
  }
  const schema = name === "ObjectMeta"
    ? embeddedMeta(descriptions)
    : shape(data![name], descriptions, [...path, name], keys);
  cache.set(key, schema);
  return schema;
}

/** What an embedded object's metadata may hold (controller-gen's generateEmbeddedObjectMeta). */
function embeddedMeta(descriptions: boolean): ZodType {
  const strings = z.record(z.string(), z.string());
  const s = z.object({
    name: z.string().optional(),
    generateName: z.string().optional(),
    namespace: z.string().optional(),
    labels: strings.optional(),
    annotations: strings.optional(),
    finalizers: z.array(z.string()).optional(),
  });
  return descriptions ? s.describe("Metadata of the objects made from this template") : s;
}

function node(
  s: OpenApi,
  descriptions: boolean,
  path: readonly string[],
  required = false,
  keys: readonly string[] = [],
  isKey = false,
): ZodType {
  let out = shape(s, descriptions, path, keys);
  if (descriptions && s.description) out = out.describe(s.description);
  if (!required && scalarDefault(s, isKey)) {
    out = (out as any).default(s.default ?? s.allOf?.[0]?.default);
  }
  return out;
}

/**
 * Whether a schema's default is kept: a scalar that is not Go's zero value. The API's
 * `default: {}`, `""`, `0` and `false` on non-pointer fields say "the zero value" to Go
 * clients; in a CRD they would be applied, and make a required `name` optional. A real default
 * matters: a list-map key such as a port's `protocol` ("TCP") must be required or defaulted.
 */
function scalarDefault(s: OpenApi, isKey = false): boolean {
  const d = s.default ?? s.allOf?.[0]?.default;
  if (d === undefined || d === null || typeof d === "object") return false;
  // A list-map key keeps even a zero default: the API server needs one (imagePullSecrets' name).
  return isKey || (d !== "" && d !== 0 && d !== false);
}

function shape(
  s: OpenApi,
  descriptions: boolean,
  path: readonly string[],
  keys: readonly string[] = [],
): ZodType {
  if (s.$ref) return build(s.$ref, descriptions, path, keys);
  if (s.allOf?.length) return shape(s.allOf[0], descriptions, path, keys);
  if (s["x-kubernetes-int-or-string"]) return intOrString();
  if (s["x-kubernetes-preserve-unknown-fields"]) {
    return s.type === "object" ? z.looseObject({}) : z.unknown();
  }
  switch (s.type) {
    case "string":
      return z.string();
    case "boolean":
      return z.boolean();
    case "integer":
      return s.format === "int32" ? z.int32() : z.int();
    case "number":
      return z.number();
    case "array": {
      const type = s["x-kubernetes-list-type"];
      const mapKeys = type === "map" ? s["x-kubernetes-list-map-keys"] ?? [] : [];
      const items = z.array(node(s.items ?? {}, descriptions, path, false, mapKeys));
      if (type === "map") return listMap(items, mapKeys);
      return type ? listType(items, type) : items;
    }
    case "object":
    case undefined: {
      let obj: ZodType;
      if (s.properties) {
        const required = new Set(s.required ?? []);
        obj = z.object(
          Object.fromEntries(
            Object.entries(s.properties).map(([k, p]) => {
              const must = required.has(k);
              const isKey = keys.includes(k);
              const child = node(p, descriptions, path, must, [], isKey);
              // A defaulted field is already optional on input.
              return [k, must || scalarDefault(p, isKey) ? child : child.optional()];
            }),
          ),
        );
      } else if (typeof s.additionalProperties === "object") {
        obj = z.record(z.string(), node(s.additionalProperties, descriptions, path));
      } else if (s.type === undefined) {
        return z.unknown();
      } else {
        obj = z.looseObject({});
      }
      const mt = s["x-kubernetes-map-type"];
      return mt ? mapType(obj as any, mt) : obj;
    }
    default:
      return z.unknown();
  }
}
