import assert from "node:assert/strict";
import { parseNdjson } from "./_ndjson.ts";

async function* from(chunks: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const c of chunks) yield c;
}

async function collect(chunks: Uint8Array[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const v of parseNdjson(from(chunks))) out.push(v);
  return out;
}

const enc = new TextEncoder();

Deno.test("parseNdjson parses whole lines", async () => {
  const got = await collect([enc.encode('{"a":1}\n{"a":2}\n')]);
  assert.deepEqual(got, [{ a: 1 }, { a: 2 }]);
});

Deno.test("parseNdjson handles every split point, including inside UTF-8 characters", async () => {
  const text = '{"type":"ADDED","object":{"name":"häßlich-€"}}\n{"type":"DELETED","object":{}}\n';
  const bytes = enc.encode(text);
  const want = text.trim().split("\n").map((l) => JSON.parse(l));
  for (let i = 0; i <= bytes.length; i++) {
    for (let j = i; j <= bytes.length; j += 7) {
      const got = await collect([bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]);
      assert.deepEqual(got, want, `split at ${i}/${j}`);
    }
  }
});

Deno.test("parseNdjson handles one byte per chunk", async () => {
  const bytes = enc.encode('{"x":"y"}\n\n{"z":[1,2]}\n');
  const got = await collect([...bytes].map((b) => new Uint8Array([b])));
  assert.deepEqual(got, [{ x: "y" }, { z: [1, 2] }]);
});

Deno.test("parseNdjson parses a final line without newline", async () => {
  assert.deepEqual(await collect([enc.encode('{"a":1}\n{"b"'), enc.encode(":2}")]), [
    { a: 1 },
    { b: 2 },
  ]);
});

Deno.test("parseNdjson does not keep references to reused chunk buffers", async () => {
  const buf = new Uint8Array(8);
  async function* reuse(): AsyncIterable<Uint8Array> {
    buf.set(enc.encode('{"a":')); // 5 bytes
    yield buf.subarray(0, 5);
    buf.fill(0x20);
    buf.set(enc.encode("1}\n"));
    yield buf.subarray(0, 3);
  }
  const out: unknown[] = [];
  for await (const v of parseNdjson(reuse())) out.push(v);
  assert.deepEqual(out, [{ a: 1 }]);
});

Deno.test("parseNdjson throws SyntaxError on a malformed line", async () => {
  await assert.rejects(collect([enc.encode("{nope}\n")]), SyntaxError);
});

// Whether this is linear in the line's length is measured, not asserted, by
// bench/ndjson_linear_bench.ts; this test checks only the result.
Deno.test("parseNdjson parses a 4 MB line split into 1 KiB chunks", async () => {
  const big = JSON.stringify({ data: "x".repeat(4_000_000) }) + "\n";
  const bytes = enc.encode(big);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 1024) chunks.push(bytes.subarray(i, i + 1024));
  const got = await collect(chunks) as { data: string }[];
  assert.equal(got[0].data.length, 4_000_000);
});
