// Is parseNdjson linear in a line's length when the line arrives in many small chunks? One
// JSON line of 1 MB and one of 8 MB, each split into 1 KiB chunks, parsed alternately; the
// report is the ratio of the medians. About 8 is linear; about 64 would be quadratic
// (re-decoding or re-copying the pending bytes on every chunk). Measured and reported, never
// asserted: a loaded machine changes the times, not what they mean.
//
//   deno run bench/ndjson_linear_bench.ts [rounds]
import { parseNdjson } from "../src/client/_ndjson.ts";

const CHUNK = 1024;

function chunked(bytesOfData: number): Uint8Array[] {
  const bytes = new TextEncoder().encode(JSON.stringify({ data: "x".repeat(bytesOfData) }) + "\n");
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.subarray(i, i + CHUNK));
  return chunks;
}

async function timeParse(chunks: Uint8Array[]): Promise<number> {
  async function* from() {
    for (const c of chunks) yield c;
  }
  const t0 = performance.now();
  let n = 0;
  for await (const _ of parseNdjson(from())) n++;
  const ms = performance.now() - t0;
  if (n !== 1) throw new Error(`Expected one value, got ${n}`);
  return ms;
}

const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)];

const rounds = Number(Deno.args[0] ?? 15);
const small = chunked(1_000_000);
const large = chunked(8_000_000);
const times = { small: [] as number[], large: [] as number[] };
for (let i = 0; i < rounds + 2; i++) {
  const s = await timeParse(small);
  const l = await timeParse(large);
  if (i >= 2) times.small.push(s), times.large.push(l); // two warm-up rounds
}
const [s, l] = [median(times.small), median(times.large)];
console.log(
  `parseNdjson, one line in 1 KiB chunks: 1 MB ${s.toFixed(1)} ms, 8 MB ${l.toFixed(1)} ms ` +
    `(medians of ${rounds}); ratio ${
      (l / s).toFixed(1)
    } for 8x the bytes (linear: ~8, quadratic: ~64)`,
);
