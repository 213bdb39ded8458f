/**
 * Custom resources from zod schemas: `defineResource`, the zod → structural OpenAPI v3
 * conversion behind it, the markers that map to Kubernetes schema extensions (`listMap`,
 * `listType`, `mapType`, `intOrString`, `embeddedResource`, `cel`), the schema of
 * `metav1.Condition` for `status.conditions`, and the CRD it builds. The zod schemas of
 * built-in types (`builtinSchema`) are their own entry, `@kubeno/kubeno/schema/builtin`.
 *
 * @example The structural schema of a spec
 * ```ts
 * import { listMap, toStructuralSchema, z } from "./schema.ts";
 *
 * const spec = z.object({
 *   ports: listMap(z.array(z.object({ name: z.string(), port: z.int() })), ["name"]),
 * });
 * const schema = toStructuralSchema(spec);
 * if (schema.properties?.ports["x-kubernetes-list-type"] !== "map") throw new Error();
 * ```
 *
 * @module
 */
export {
  type CustomResource,
  defineResource,
  type DefineResourceOptions,
  type OutputOf,
  type ResourceIssue,
  type ResourceObject,
  ResourceValidationError,
  type SafeParseResult,
  type ScaleOptions,
} from "./src/schema/define_resource.ts";
export {
  CONVERSION_DATA_ANNOTATION,
  ConversionError,
  type Converted,
  type SpokeVersion,
} from "./src/schema/conversion.ts";
export {
  cel,
  type EmbeddedObjectSchema,
  embeddedResource,
  intOrString,
  listMap,
  listType,
  mapType,
  type StructuralSchemaOptions,
  toStructuralSchema,
} from "./src/schema/schema.ts";
export { type ConditionSchema, conditionSchema, conditionsSchema } from "./src/schema/condition.ts";
export {
  z,
  type ZodArray,
  type ZodEnum,
  type ZodInt,
  type ZodLooseObject,
  type ZodObject,
  type ZodOptional,
  type ZodRecord,
  type ZodString,
  type ZodType,
  type ZodTypeOf,
  type ZodUnion,
} from "./src/util/zod.ts";
