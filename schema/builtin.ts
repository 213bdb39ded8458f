/**
 * Zod schemas of Kubernetes' built-in types (`PodTemplateSpec`, `JobTemplateSpec`,
 * `Container`, `ResourceRequirements`, …) for embedding in a custom resource, as kubebuilder
 * embeds them. Its own entry point: the generated OpenAPI data behind it (about 900 KB) is
 * loaded only by code that imports this module, never by `@kubeno/kubeno/schema`.
 *
 * @example Embed a Job template in a spec
 * ```ts
 * import { builtinSchema } from "./builtin.ts";
 * import { toStructuralSchema, z } from "../schema.ts";
 *
 * const spec = z.object({ jobTemplate: builtinSchema("JobTemplateSpec", { descriptions: false }) });
 * const schema = toStructuralSchema(spec);
 * if (schema.properties?.jobTemplate.type !== "object") throw new Error("not embedded");
 * ```
 *
 * @module
 */
export {
  builtinSchema,
  type BuiltinSchemaOptions,
  type BuiltinTypeName,
  type BuiltinTypes,
} from "../src/schema/builtin.ts";
