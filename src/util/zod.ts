/**
 * kubeno's one door to zod (v4): the schema library `defineResource` reads.
 *
 * Besides `z`, this module names the zod types that kubeno's own signatures use. They are
 * aliases, not copies: each is the very type zod declares, so schemas built with `z` (or with
 * zod imported directly) fit them, and inference is unchanged.
 *
 * @module
 */
import { z as zod } from "zod";

/**
 * zod v4, for kubeno's own modules. What users import is `z` from `z.ts` (the same value,
 * also a namespace of zod's type helpers, so that `z.infer<typeof spec>` works); the zod
 * types kubeno's signatures use are exported beside it ({@linkcode ZodType},
 * {@linkcode ZodObject}, ...).
 *
 * @example A spec schema
 * ```ts
 * import { z } from "./zod.ts";
 * const spec = z.object({ image: z.string(), replicas: z.int().default(1) });
 * if (spec.parse({ image: "nginx" }).replicas !== 1) throw new Error();
 * ```
 */
export const z: typeof zod = zod;

// Aliases whose target has type arguments are spelled as what a `z` function returns
// (`ReturnType<typeof z.optional<T>>`) rather than `zod.ZodOptional<T>`: the same type, but
// `deno doc --lint` then sees only public names (`z`) instead of zod's undocumented internals.

/** Any zod schema: zod's `z.ZodType`. */
export type ZodType = zod.ZodType;

/**
 * A zod schema whose output is `T` (spelled as what `z.custom<T>()` returns, a `z.ZodType<T>`).
 *
 * @typeParam T What the schema parses to.
 */
export type ZodTypeOf<T> = ReturnType<typeof z.custom<T>>;

/** A zod object schema of any shape: zod's `z.ZodObject`, what `z.object(...)` returns. */
export type ZodObject = zod.ZodObject;

/** A zod array schema of any item: zod's `z.ZodArray`, what `z.array(...)` returns. */
export type ZodArray = zod.ZodArray;

/** A zod string schema: zod's `z.ZodString`, what `z.string()` returns. */
export type ZodString = zod.ZodString;

/** A zod integer schema: zod's `z.ZodInt`, what `z.int()` returns. */
export type ZodInt = zod.ZodInt;

/**
 * A zod enum schema: zod's `z.ZodEnum<Values>`, what `z.enum([...])` returns, its values
 * spelled as an object (`{ True: "True"; False: "False" }`).
 *
 * @typeParam Values Each value, keyed by itself.
 */
// Spelled with `z.nativeEnum`, the one-signature twin of the overloaded `z.enum`: an instantiation
// expression on an overloaded function must fit every overload.
export type ZodEnum<
  Values extends Readonly<Record<string, string | number>> = Readonly<Record<string, string>>,
> = ReturnType<typeof z.nativeEnum<Values>>;

/**
 * A zod record schema: zod's `z.ZodRecord<Key, Value>`, what `z.record(key, value)` returns.
 *
 * @typeParam Key The schema of the keys.
 * @typeParam Value The schema of the values.
 */
export type ZodRecord<
  Key extends Parameters<typeof z.record>[0] = Parameters<typeof z.record>[0],
  Value extends ZodType = ZodType,
> = ReturnType<typeof z.record<Key, Value>>;

/**
 * An optional zod schema: zod's `z.ZodOptional<T>`, what `schema.optional()` returns.
 *
 * @typeParam T The schema made optional.
 */
export type ZodOptional<T extends ZodType = ZodType> = ReturnType<typeof z.optional<T>>;

/**
 * A zod union schema: zod's `z.ZodUnion<Options>`, what `z.union(options)` returns.
 *
 * @typeParam Options The schemas of the alternatives.
 */
export type ZodUnion<Options extends readonly ZodType[] = readonly ZodType[]> = ReturnType<
  typeof z.union<Options>
>;

/**
 * A zod object schema that keeps unknown fields: zod's `z.ZodObject<Shape, z.core.$loose>`,
 * what `z.looseObject(shape)` returns.
 *
 * @typeParam Shape The schemas of the known fields.
 */
export type ZodLooseObject<Shape extends Record<string, ZodType>> = ReturnType<
  typeof z.looseObject<Shape>
>;

/** The input type of a zod schema (what `parse` accepts): zod's own `z.input`. */
export type ZodInput<T> = zod.input<T>;
