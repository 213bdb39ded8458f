import { deepStrictEqual, throws } from "node:assert";
import { z } from "zod";
import type { JSONSchemaProps } from "../core/crd.ts";
import {
  cel,
  embeddedResource,
  intOrString,
  listMap,
  listType,
  mapType,
  toStructuralSchema,
} from "./schema.ts";

const convert = (s: z.ZodType): JSONSchemaProps => toStructuralSchema(s);
const field = (s: z.ZodType): JSONSchemaProps => convert(z.object({ f: s })).properties!.f;
const fails = (s: z.ZodType, message: string | RegExp) =>
  throws(() => toStructuralSchema(s, { name: "Myapp", path: "spec" }), (e: unknown) => {
    if (!(e instanceof TypeError)) return false;
    if (typeof message === "string" ? e.message !== message : !message.test(e.message)) {
      throw new Error(`unexpected message: ${e.message}`);
    }
    return true;
  });

Deno.test("toStructuralSchema() maps scalars with descriptions, defaults and bounds", () => {
  deepStrictEqual(field(z.string().describe("Image")), { type: "string", description: "Image" });
  deepStrictEqual(field(z.boolean().default(false)), { type: "boolean", default: false });
  deepStrictEqual(field(z.number()), { type: "number" });
  deepStrictEqual(field(z.number().int().min(0).max(10)), {
    type: "integer",
    format: "int64",
    minimum: 0,
    maximum: 10,
  });
  deepStrictEqual(field(z.int()), { type: "integer", format: "int64" });
  deepStrictEqual(field(z.int32()), { type: "integer", format: "int32" });
  deepStrictEqual(field(z.uint32()), {
    type: "integer",
    format: "int64",
    minimum: 0,
    maximum: 4294967295,
  });
  deepStrictEqual(field(z.float32()), { type: "number", format: "float" });
  deepStrictEqual(field(z.float64()), { type: "number", format: "double" });
  deepStrictEqual(field(z.number().positive().lt(1)), {
    type: "number",
    minimum: 0,
    exclusiveMinimum: true,
    maximum: 1,
    exclusiveMaximum: true,
  });
  deepStrictEqual(field(z.number().multipleOf(5)), { type: "number", multipleOf: 5 });
  deepStrictEqual(field(z.number().multipleOf(2).multipleOf(3)), {
    type: "number",
    multipleOf: 2,
    allOf: [{ multipleOf: 3 }],
  });
});

Deno.test("toStructuralSchema() maps string lengths, patterns and formats", () => {
  deepStrictEqual(field(z.string().min(1).max(63)), {
    type: "string",
    minLength: 1,
    maxLength: 63,
  });
  deepStrictEqual(field(z.string().length(4)), { type: "string", minLength: 4, maxLength: 4 });
  deepStrictEqual(field(z.string().regex(/^[a-z]+$/)), { type: "string", pattern: "^[a-z]+$" });
  deepStrictEqual(field(z.string().regex(/^a/i)), { type: "string", pattern: "(?i)^a" });
  deepStrictEqual(field(z.string().regex(/^a/).regex(/b$/)), {
    type: "string",
    pattern: "^a",
    allOf: [{ pattern: "b$" }],
  });
  deepStrictEqual(field(z.string().startsWith("x-")), { type: "string", pattern: "^x-.*" });
  deepStrictEqual(field(z.email()), { type: "string", format: "email" });
  deepStrictEqual(field(z.string().email()), { type: "string", format: "email" });
  deepStrictEqual(field(z.uuid()), { type: "string", format: "uuid" });
  deepStrictEqual(field(z.url()), { type: "string", format: "uri" });
  deepStrictEqual(field(z.iso.datetime()), { type: "string", format: "date-time" });
  deepStrictEqual(field(z.iso.date()), { type: "string", format: "date" });
  deepStrictEqual(field(z.ipv4()), { type: "string", format: "ipv4" });
  deepStrictEqual(field(z.cidrv6()), { type: "string", format: "cidr" });
  deepStrictEqual(field(z.base64()), { type: "string", format: "byte" });
  deepStrictEqual(field(z.hostname()), { type: "string", format: "hostname" });
  deepStrictEqual(field(z.templateLiteral(["v", z.int()])), {
    type: "string",
    pattern: "^v-?\\d+$",
  });
});

Deno.test("toStructuralSchema() maps enums and literal unions", () => {
  deepStrictEqual(field(z.enum(["A", "B"])), { type: "string", enum: ["A", "B"] });
  deepStrictEqual(field(z.literal("On")), { type: "string", enum: ["On"] });
  deepStrictEqual(field(z.literal(["a", "b"])), { type: "string", enum: ["a", "b"] });
  deepStrictEqual(field(z.union([z.literal("a"), z.literal("b"), z.enum(["c"])])), {
    type: "string",
    enum: ["a", "b", "c"],
  });
  deepStrictEqual(field(z.union([z.literal(1), z.literal(2)])), { type: "integer", enum: [1, 2] });
  deepStrictEqual(field(z.literal(true)), { type: "boolean", enum: [true] });
  deepStrictEqual(field(z.enum(["A"]).default("A")), { type: "string", enum: ["A"], default: "A" });
  deepStrictEqual(field(z.union([z.literal("a"), z.null()])), {
    type: "string",
    enum: ["a"],
    nullable: true,
  });
});

Deno.test("toStructuralSchema() maps objects, required fields, nullable and preserved fields", () => {
  deepStrictEqual(
    convert(
      z.object({
        a: z.string(),
        b: z.string().optional(),
        c: z.int().default(1),
        d: z.string().nullable(),
        e: z.string().nullish(),
        f: z.unknown(),
        g: z.any(),
        h: z.string().optional().nonoptional(),
      }).describe("Spec"),
    ),
    {
      type: "object",
      description: "Spec",
      properties: {
        a: { type: "string" },
        b: { type: "string" },
        c: { type: "integer", format: "int64", default: 1 },
        d: { type: "string", nullable: true },
        e: { type: "string", nullable: true },
        f: { "x-kubernetes-preserve-unknown-fields": true },
        g: { "x-kubernetes-preserve-unknown-fields": true },
        h: { type: "string" },
      },
      required: ["a", "d", "h"],
    },
  );
  deepStrictEqual(convert(z.looseObject({ a: z.string() })), {
    type: "object",
    properties: { a: { type: "string" } },
    required: ["a"],
    "x-kubernetes-preserve-unknown-fields": true,
  });
  deepStrictEqual(convert(z.strictObject({})), { type: "object" });
  deepStrictEqual(convert(z.object({}).catchall(z.int())), {
    type: "object",
    additionalProperties: { type: "integer", format: "int64" },
  });
  // Description on the outermost wrapper wins, and object defaults are kept whole.
  deepStrictEqual(field(z.object({ x: z.int().default(2) }).default({ x: 3 }).describe("Outer")), {
    type: "object",
    properties: { x: { type: "integer", format: "int64", default: 2 } },
    default: { x: 3 },
    description: "Outer",
  });
  // Intersections of objects merge.
  deepStrictEqual(
    convert(z.intersection(z.object({ a: z.string() }), z.object({ b: z.int().optional() }))),
    {
      type: "object",
      properties: { a: { type: "string" }, b: { type: "integer", format: "int64" } },
      required: ["a"],
    },
  );
});

Deno.test("toStructuralSchema() maps arrays, maps, list types and map types", () => {
  deepStrictEqual(field(z.array(z.string()).min(1).max(5)), {
    type: "array",
    items: { type: "string" },
    minItems: 1,
    maxItems: 5,
  });
  deepStrictEqual(field(z.array(z.int()).nonempty()), {
    type: "array",
    items: { type: "integer", format: "int64" },
    minItems: 1,
  });
  deepStrictEqual(field(z.record(z.string(), z.string())), {
    type: "object",
    additionalProperties: { type: "string" },
  });
  deepStrictEqual(field(listType(z.array(z.string()), "set")), {
    type: "array",
    items: { type: "string" },
    "x-kubernetes-list-type": "set",
  });
  deepStrictEqual(field(listType(z.array(z.object({ a: z.string() })), "atomic")), {
    type: "array",
    items: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
    "x-kubernetes-list-type": "atomic",
  });
  deepStrictEqual(
    field(
      listMap(
        z.array(z.object({ name: z.string(), proto: z.string().default("TCP"), port: z.int() })),
        [
          "name",
          "proto",
        ],
      ),
    ),
    {
      type: "array",
      items: {
        type: "object",
        properties: {
          name: { type: "string" },
          proto: { type: "string", default: "TCP" },
          port: { type: "integer", format: "int64" },
        },
        required: ["name", "port"],
      },
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name", "proto"],
    },
  );
  deepStrictEqual(field(mapType(z.record(z.string(), z.string()), "atomic")), {
    type: "object",
    additionalProperties: { type: "string" },
    "x-kubernetes-map-type": "atomic",
  });
  deepStrictEqual(field(mapType(z.object({ a: z.string().optional() }), "granular")), {
    type: "object",
    properties: { a: { type: "string" } },
    "x-kubernetes-map-type": "granular",
  });
});

Deno.test("toStructuralSchema() maps int-or-string, embedded resources and CEL rules", () => {
  const ios = {
    "x-kubernetes-int-or-string": true,
    anyOf: [{ type: "integer" }, { type: "string" }],
  };
  deepStrictEqual(field(intOrString()), ios);
  deepStrictEqual(field(z.union([z.string(), z.number().int()])), ios);
  deepStrictEqual(field(z.union([z.int().min(0), z.string().regex(/^\d+%$/)]).default("25%")), {
    ...ios,
    minimum: 0,
    pattern: "^\\d+%$",
    default: "25%",
  });
  deepStrictEqual(field(intOrString().nullable()), { ...ios, nullable: true });
  deepStrictEqual(field(embeddedResource()), {
    type: "object",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
    },
    required: ["apiVersion", "kind"],
    "x-kubernetes-preserve-unknown-fields": true,
    "x-kubernetes-embedded-resource": true,
  });
  deepStrictEqual(
    field(embeddedResource(z.object({
      apiVersion: z.string(),
      kind: z.string(),
      metadata: z.object({ name: z.string().max(20), labels: z.record(z.string(), z.string()) })
        .optional(),
    }))),
    {
      type: "object",
      properties: {
        apiVersion: { type: "string" },
        kind: { type: "string" },
        metadata: { type: "object", properties: { name: { type: "string", maxLength: 20 } } },
      },
      required: ["apiVersion", "kind"],
      "x-kubernetes-embedded-resource": true,
    },
  );
  const range = cel(z.object({ min: z.int(), max: z.int() }), "self.min <= self.max");
  deepStrictEqual(
    convert(cel(range, { rule: "self.max < 100", message: "too big", fieldPath: ".max" })),
    {
      type: "object",
      properties: {
        min: { type: "integer", format: "int64" },
        max: { type: "integer", format: "int64" },
      },
      required: ["min", "max"],
      "x-kubernetes-validations": [
        { rule: "self.min <= self.max" },
        { rule: "self.max < 100", message: "too big", fieldPath: ".max" },
      ],
    },
  );
  // A refinement is accepted when a CEL rule says the same beside it.
  deepStrictEqual(field(cel(z.string().refine((s) => s !== "x"), "self != 'x'")), {
    type: "string",
    "x-kubernetes-validations": [{ rule: "self != 'x'" }],
  });
  // The same works through .meta() with the OpenAPI extension names.
  deepStrictEqual(
    field(z.array(z.string()).meta({ "x-kubernetes-list-type": "set", title: "Set" })),
    {
      type: "array",
      items: { type: "string" },
      title: "Set",
      "x-kubernetes-list-type": "set",
    },
  );
});

Deno.test("toStructuralSchema() throws naming the path for inexpressible constructs", () => {
  const at = "Cannot generate CRD schema for Myapp at spec.template.port: ";
  fails(
    z.object({ template: z.object({ port: z.string().transform(Number) }) }),
    `${at}z.transform is not expressible as OpenAPI; use a CEL rule or remove it`,
  );
  const p = (s: z.ZodType) => z.object({ template: z.object({ port: s }) });
  fails(p(z.preprocess((v) => v, z.string())), /at spec\.template\.port: z\.transform/);
  fails(
    p(z.int().refine((n) => n > 0)),
    /at spec\.template\.port: z\.refine\(\)\/z\.superRefine\(\)/,
  );
  fails(p(z.int().superRefine(() => {})), /at spec\.template\.port: z\.refine/);
  fails(p(z.object({ a: z.string() }).refine(() => true)), /at spec\.template\.port: z\.refine/);
  fails(
    p(z.union([z.object({ a: z.string() }), z.object({ b: z.int() })])),
    /at spec\.template\.port: a union of objects/,
  );
  fails(
    p(z.discriminatedUnion("t", [
      z.object({ t: z.literal("a") }),
      z.object({ t: z.literal("b"), x: z.int() }),
    ])),
    /a union of objects/,
  );
  fails(
    p(z.union([z.string(), z.number()])),
    /only expressible as int-or-string; use intOrString\(\)/,
  );
  fails(p(z.union([z.string(), z.boolean()])), /a union of string and boolean/);
  fails(p(z.union([z.literal("a"), z.literal(1)])), /an enum mixing string and number/);
  fails(p(z.intersection(z.string(), z.int())), /an intersection of string and integer/);
  fails(
    p(z.intersection(z.object({ a: z.string() }), z.object({ a: z.int() }))),
    /at spec\.template\.port\.a: both sides of an intersection/,
  );
  fails(p(z.tuple([z.string(), z.int()])), /at spec\.template\.port: z\.tuple\(\)/);
  fails(p(z.date()), /z\.date\(\) is not expressible as OpenAPI; use z\.iso\.datetime\(\)/);
  fails(p(z.bigint()), /z\.bigint\(\)/);
  fails(p(z.function()), /z\.function\(\)/);
  fails(p(z.promise(z.string())), /z\.promise\(\)/);
  fails(p(z.map(z.string(), z.string())), /z\.map\(\)/);
  fails(p(z.set(z.string())), /z\.set\(\)/);
  fails(p(z.symbol()), /z\.symbol\(\)/);
  fails(p(z.null()), /z\.null\(\) alone/);
  fails(p(z.undefined()), /z\.undefined\(\)/);
  fails(p(z.never()), /z\.never\(\)/);
  fails(p(z.nan()), /z\.nan\(\)/);
  fails(p(z.custom<string>(() => true)), /z\.custom\(\)/);
  fails(p(z.string().catch("x")), /z\.catch/);
  fails(p(z.string().pipe(z.email())), /z\.pipe/);
  fails(p(z.string().trim()), /overwrite/);
  fails(p(z.string().regex(/^(?!x)/)), /lookaround assertions/);
  fails(p(z.string().regex(/(a)\1/)), /backreferences/);
  fails(
    p(z.string().default(undefined as unknown as string)),
    /the default undefined is not a JSON value/,
  );
  fails(p(z.int().min(5).default(1)), /the default 1 does not satisfy the schema/);
  fails(p(z.record(z.enum(["a"]), z.string())), /keys must be z\.string\(\)/);
  fails(p(z.record(z.string().regex(/^a/), z.string())), /z\.refine/);
  fails(p(z.object({ a: z.string() }).catchall(z.string())), /typed \.catchall\(\)/);
  fails(p(listType(z.array(z.object({})), "set")), /"set" must hold scalars/);
  fails(p(listMap(z.array(z.object({ name: z.string() })), ["id"])), /key "id" is not a field/);
  fails(
    p(listMap(z.array(z.object({ id: z.string().optional() })), ["id"])),
    /required or have a default/,
  );
  fails(p(listMap(z.array(z.object({ id: z.object({}) })), ["id"])), /must be a scalar field/);
  fails(p(z.string().meta({ "x-kubernetes-int-or-string": true })), /use intOrString\(\)/);
  fails(p(z.string().meta({ "x-kubernetes-embedded-resource": true })), /must be an object/);
  fails(
    p(embeddedResource(
      z.object({ metadata: z.object({ labels: z.record(z.string(), z.string().max(3)) }) }),
    )),
    /at spec\.template\.port\.metadata\.labels: only metadata\.name and metadata\.generateName/,
  );
  const Node: z.ZodType = z.lazy(() => z.object({ children: z.array(Node) }));
  fails(p(Node), /at spec\.template\.port\.children\[\*\]: a recursive schema/);
  fails(z.object({ "a-b": z.date() }), /at spec\["a-b"\]: z\.date/);
});

Deno.test("listType(set) and listMap() reject repeated items in parse, as the API server does", () => {
  const issues = (s: z.ZodType, v: unknown) => {
    const r = s.safeParse(v);
    return r.success ? [] : r.error.issues.map((i) => ({ path: i.path, message: i.message }));
  };
  const set = listType(z.array(z.string()), "set");
  deepStrictEqual(issues(set, ["a", "b"]), []);
  deepStrictEqual(issues(set, ["a", "b", "a", "a"]), [
    { path: [2], message: 'Duplicate value: "a"' },
    { path: [3], message: 'Duplicate value: "a"' },
  ]);
  // Values are compared as JSON: 1 and "1" differ, as they do for the API server.
  deepStrictEqual(issues(listType(z.array(intOrString()), "set"), [1, "1"]), []);
  deepStrictEqual(issues(listType(z.array(z.string()), "atomic"), ["a", "a"]), []);

  const ports = listMap(
    z.array(z.object({ name: z.string(), proto: z.string().default("TCP"), port: z.int() })),
    ["name", "proto"],
  );
  deepStrictEqual(
    issues(ports, [{ name: "a", port: 1 }, { name: "a", proto: "UDP", port: 2 }]),
    [],
  );
  // Keys are compared after defaults: proto "TCP" is filled in on both.
  deepStrictEqual(
    issues(z.object({ ports }), { ports: [{ name: "a", port: 1 }, { name: "a", port: 2 }] }),
    [{ path: ["ports", 1], message: 'Duplicate value: {"name":"a","proto":"TCP"}' }],
  );
  // A malformed item is reported by the item schema, not as a duplicate.
  deepStrictEqual(issues(ports, [{ name: 1, port: 1 }]).map((i) => i.path), [[0, "name"]]);

  // The checks carry no CEL rule and need none: the list type says the same to the server.
  deepStrictEqual(field(set)["x-kubernetes-list-type"], "set");
  deepStrictEqual(field(ports)["x-kubernetes-list-map-keys"], ["name", "proto"]);
  // A refinement of the user's own on the same list still needs its CEL rule.
  fails(
    z.object({ f: set.refine((v) => v.length < 3) }),
    /at spec\.f: z\.refine\(\)\/z\.superRefine\(\)/,
  );
});
