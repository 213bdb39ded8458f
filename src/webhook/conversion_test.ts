import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { z } from "zod";
import { defineResource } from "../schema/define_resource.ts";
import { conversionHandler } from "./conversion.ts";

const names = { group: "example.com", kind: "Widget", plural: "widgets" } as const;
const V1alpha1 = defineResource({
  ...names,
  version: "v1alpha1",
  spec: z.object({ size: z.string() }),
});
const Widget = defineResource({
  ...names,
  version: "v1",
  spec: z.object({ size: z.int() }),
  versions: [{
    resource: V1alpha1,
    toHub: (old) => {
      if (old.spec.size === "boom") throw new Error("boom is not a size");
      return { spec: { size: Number(old.spec.size) } };
    },
    fromHub: (w) => ({ spec: { size: String(w.spec.size) } }),
  }],
});
const handle = conversionHandler([Widget], { maxBodyBytes: 64 * 1024 });

const post = (body: string, path = "/convert", method = "POST") =>
  handle(
    new Request(`https://webhook${path}`, { method, body: method === "POST" ? body : undefined }),
  );
const review = (request: unknown) =>
  JSON.stringify({ apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview", request });
const obj = (apiVersion: string, size: unknown, name = "a") => ({
  apiVersion,
  kind: "Widget",
  metadata: { name, namespace: "default" },
  spec: { size },
});

Deno.test("conversionHandler converts every object of a review, in order", async () => {
  const res = await post(review({
    uid: "u1",
    desiredAPIVersion: "example.com/v1",
    objects: [obj("example.com/v1alpha1", "3", "a"), obj("example.com/v1", 4, "b")],
  }));
  strictEqual(res.status, 200);
  const body = await res.json();
  strictEqual(body.apiVersion, "apiextensions.k8s.io/v1");
  strictEqual(body.kind, "ConversionReview");
  deepStrictEqual(body.response.result, { status: "Success" });
  strictEqual(body.response.uid, "u1");
  deepStrictEqual(body.response.convertedObjects, [
    obj("example.com/v1", 3, "a"),
    obj("example.com/v1", 4, "b"),
  ]);
});

Deno.test("a failed conversion answers Failure with a message naming the object", async () => {
  const failure = async (request: unknown, pattern: RegExp) => {
    const res = await post(review(request));
    strictEqual(res.status, 200);
    const r = (await res.json()).response;
    strictEqual(r.result.status, "Failure");
    strictEqual(r.convertedObjects, undefined);
    ok(pattern.test(r.result.message), r.result.message);
  };
  await failure(
    {
      uid: "u",
      desiredAPIVersion: "example.com/v1",
      objects: [obj("example.com/v1alpha1", "boom")],
    },
    /^Cannot convert Widget "default\/a" from example.com\/v1alpha1 to example.com\/v1: boom is not a size$/,
  );
  await failure(
    { uid: "u", desiredAPIVersion: "example.com/v3", objects: [obj("example.com/v1", 1)] },
    /the desired apiVersion "example.com\/v3" is not one of example.com\/v1, example.com\/v1alpha1/,
  );
  await failure(
    {
      uid: "u",
      desiredAPIVersion: "example.com/v1",
      objects: [{ ...obj("other.io/v1", 1), kind: "Gadget" }],
    },
    /objects\[0\] has apiVersion "other.io\/v1" and kind "Gadget", which this webhook does not convert \(it converts Widget.example.com\)/,
  );
});

Deno.test("malformed requests get the status and message that name the problem", async () => {
  const cases: [string, string, number, RegExp, string?][] = [
    ["not JSON", "{nope", 400, /ConversionReview body is not valid JSON/],
    ["not an object", "[1]", 400, /^ConversionReview must be a JSON object$/],
    [
      "no request",
      JSON.stringify({ kind: "ConversionReview" }),
      400,
      /^ConversionReview has no request$/,
    ],
    [
      "no uid",
      review({ desiredAPIVersion: "example.com/v1", objects: [] }),
      400,
      /request has no uid/,
    ],
    [
      "over the limit",
      review({ uid: "u", pad: "x".repeat(70 * 1024) }),
      413,
      /larger than the limit of 65536 bytes/,
    ],
    ["elsewhere", review({ uid: "u" }), 404, /No webhook is served on path "\/mutate"/, "/mutate"],
  ];
  for (const [what, body, status, pattern, path] of cases) {
    const res = await post(body, path);
    strictEqual(res.status, status, what);
    ok(pattern.test(await res.text()), what);
  }
  const get = await post("", "/convert", "GET");
  strictEqual(get.status, 405);
  strictEqual(await get.text(), 'Method "GET" is not allowed: send a POST with a ConversionReview');
  const wrongVersion = await post(JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1beta1",
    kind: "ConversionReview",
    request: { uid: "u", desiredAPIVersion: "example.com/v1", objects: [] },
  }));
  const r = (await wrongVersion.json()).response;
  strictEqual(r.uid, "u");
  strictEqual(
    r.result.message,
    'Unsupported ConversionReview apiVersion "apiextensions.k8s.io/v1beta1" and kind "ConversionReview": send apiextensions.k8s.io/v1 ConversionReview',
  );
});

Deno.test("fuzz: mangled ConversionReviews always get an answer, never a throw", async () => {
  // A seeded generator: the same bodies on every run, so a failure can be reproduced.
  let seed = 17;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const junk = (depth: number): unknown => {
    const leaves = [null, true, 0, -1, 1e308, "", "v1", "example.com/v1", "Widget", "💥", [], {}];
    if (depth <= 0 || rand() < 0.3) return pick(leaves);
    if (rand() < 0.3) return Array.from({ length: Math.floor(rand() * 3) }, () => junk(depth - 1));
    const keys = [
      "apiVersion",
      "kind",
      "metadata",
      "spec",
      "request",
      "uid",
      "objects",
      "desiredAPIVersion",
      "name",
      "size",
      "__proto__",
    ];
    return Object.fromEntries(
      Array.from({ length: Math.floor(rand() * 4) }, () => [pick(keys), junk(depth - 1)]),
    );
  };
  const valid = () => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: {
      uid: "u",
      desiredAPIVersion: "example.com/v1",
      objects: [obj("example.com/v1alpha1", "1")],
    },
  });
  const paths = [
    ["request"],
    ["request", "uid"],
    ["request", "objects"],
    ["request", "objects", 0],
    ["request", "objects", 0, "metadata"],
    ["request", "objects", 0, "spec"],
    ["request", "objects", 0, "apiVersion"],
    ["request", "desiredAPIVersion"],
    ["apiVersion"],
    [],
  ] as const;
  const statuses = new Map<number, number>();
  const n = 2000;
  for (let i = 0; i < n; i++) {
    const body: Record<string, unknown> = valid();
    const path = pick(paths);
    if (!path.length) {
      const text = rand() < 0.5
        ? JSON.stringify(junk(4))
        : JSON.stringify(valid()).slice(0, Math.floor(rand() * 200));
      const res = await post(text ?? "");
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      ok([200, 400].includes(res.status), `status ${res.status}`);
      await res.body?.cancel();
      continue;
    }
    let at: Record<string | number, unknown> = body;
    for (const k of path.slice(0, -1)) at = at[k] as Record<string | number, unknown>;
    at[path.at(-1)!] = junk(3);
    const res = await post(JSON.stringify(body));
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    ok([200, 400].includes(res.status), `status ${res.status}`);
    if (res.status === 200) {
      const r = (await res.json()).response;
      strictEqual(r.uid, (body.request as { uid: string }).uid);
      ok(["Success", "Failure"].includes(r.result.status));
      if (r.result.status === "Failure") {
        ok(typeof r.result.message === "string" && r.result.message);
      }
    } else await res.body?.cancel();
  }
  const total = [...statuses.values()].reduce((a, b) => a + b, 0);
  strictEqual(total, n);
  console.log(
    `fuzz: ${n} mangled ConversionReviews: ${JSON.stringify(Object.fromEntries(statuses))}`,
  );
  ok(statuses.get(200)! > 0 && statuses.get(400)! > 0, JSON.stringify([...statuses]));
});

Deno.test("two resources with one group and kind cannot share the handler", () => {
  throws(
    () => conversionHandler([Widget, Widget]),
    /Cannot serve two conversions of "Widget.example.com"/,
  );
});
