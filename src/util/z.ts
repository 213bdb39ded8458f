/**
 * `z`, as operators import it: zod v4's `z` (the value kubeno's own modules use, from
 * `zod.ts`), and also a namespace of zod's type helpers, so that `z.infer<typeof spec>`,
 * `z.input` and `z.output` work as with zod's own `z`. The root entry (`@kubeno/kubeno`)
 * exports this one; `@kubeno/kubeno/schema` exports the plain value of `zod.ts` (the same
 * object), whose type aliases read `typeof z.union` and the like, where `z` must be a value
 * alone.
 *
 * @example A spec schema and its type
 * ```ts
 * import { z } from "./z.ts";
 * const spec = z.object({ image: z.string(), replicas: z.int().default(1) });
 * type Spec = z.infer<typeof spec>;
 * const parsed: Spec = spec.parse({ image: "nginx" });
 * if (parsed.replicas !== 1) throw new Error();
 * ```
 *
 * @module
 */
import { z as zod } from "./zod.ts";

/**
 * zod v4, re-exported so that `defineResource` schemas need no other import: use it for values
 * (`z.object(...)`, `z.string()`) and types (`z.infer<typeof spec>`).
 */
export const z: typeof zod = zod;

/**
 * zod's type helpers under `z`, so that `z.infer<typeof spec>` (and `z.input`, `z.output`)
 * work with kubeno's `z` as with zod's own.
 */
export declare namespace z {
  /**
   * What a schema parses to: zod's `z.infer`.
   * @typeParam T The schema's type.
   */
  export type infer<T> = output<T>;
  /**
   * What a schema parses to: zod's `z.output`.
   * @typeParam T The schema's type.
   */
  export type output<T> = T extends { _zod: { output: unknown } } ? T["_zod"]["output"] : never;
  /**
   * What a schema accepts: zod's `z.input`.
   * @typeParam T The schema's type.
   */
  export type input<T> = T extends { _zod: { input: unknown } } ? T["_zod"]["input"] : never;
}
