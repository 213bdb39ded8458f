/**
 * kubeno's one door to zod (v4): the schema library `defineResource` reads.
 *
 * @module
 */
import { z as zod } from "zod";

/**
 * zod v4, re-exported so that `defineResource` schemas need no other import. Use it for
 * values (`z.object(...)`, `z.string()`); for zod's types (`z.infer`, `z.ZodType`), import
 * `type { z }` from `npm:zod` directly.
 *
 * @example A spec schema
 * ```ts
 * import { z } from "./zod.ts";
 * const spec = z.object({ image: z.string(), replicas: z.int().default(1) });
 * if (spec.parse({ image: "nginx" }).replicas !== 1) throw new Error();
 * ```
 */
export const z: typeof zod = zod;
