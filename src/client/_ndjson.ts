/**
 * Incremental newline-delimited JSON parsing for watch streams.
 *
 * @module
 */

/**
 * Splits a byte stream into JSON values, one per line, and yields them in batches: every
 * value whose line ended in one chunk, together. A consumer then takes a chunk's events in
 * one synchronous loop instead of a promise per event — what makes a watch-list's tens of
 * thousands of initial events cheap. Each chunk is decoded once (the decoder keeps a
 * multi-byte character split between chunks), so the work is linear in the input however
 * the stream is split. Blank lines are skipped; a final line without a newline is parsed
 * when the stream ends. Batches are never empty.
 *
 * @param chunks The byte chunks, in order.
 * @returns The parsed values, a batch per chunk that ended at least one line.
 * @throws {SyntaxError} When a line is not valid JSON.
 */
export async function* parseNdjsonBatches(
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<unknown[], void, undefined> {
  const decoder = new TextDecoder();
  // The text after the last newline seen: the start of a line still on its way.
  let tail = "";
  const reader = chunkReader(chunks);
  try {
    for (;;) {
      const read = await reader.read();
      if (read.done) break;
      const text = decoder.decode(read.value, { stream: true });
      let nl = text.indexOf("\n");
      if (nl < 0) {
        tail += text;
        continue;
      }
      const batch: unknown[] = [];
      try {
        parseLine(tail + text.slice(0, nl), batch);
        let start = nl + 1;
        while ((nl = text.indexOf("\n", start)) >= 0) {
          parseLine(text.slice(start, nl), batch);
          start = nl + 1;
        }
        tail = text.slice(start);
      } catch (err) {
        // The values before a malformed line are delivered, as one by one they would be.
        if (batch.length > 0) yield batch;
        throw err;
      }
      if (batch.length > 0) yield batch;
    }
  } finally {
    reader.close();
  }
  tail += decoder.decode();
  const batch: unknown[] = [];
  parseLine(tail, batch);
  if (batch.length > 0) yield batch;
}

/**
 * Splits a byte stream into JSON values, one per line, as {@linkcode parseNdjsonBatches}
 * does, yielding them one by one.
 *
 * @param chunks The byte chunks, in order.
 * @returns The parsed values.
 * @throws {SyntaxError} When a line is not valid JSON.
 */
export async function* parseNdjson(
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<unknown, void, undefined> {
  for await (const batch of parseNdjsonBatches(chunks)) yield* batch;
}

/**
 * A reader of `chunks`: of a `ReadableStream` its own reader, whose `read()` costs less per
 * chunk than the stream's async iterator (a watch-list's response arrives in thousands of
 * chunks); `close` releases it, cancelling what is left.
 */
function chunkReader(chunks: AsyncIterable<Uint8Array>): {
  read(): Promise<IteratorResult<Uint8Array, unknown>>;
  close(): void;
} {
  if (chunks instanceof ReadableStream) {
    const reader = (chunks as ReadableStream<Uint8Array>).getReader();
    return {
      read: () => reader.read() as Promise<IteratorResult<Uint8Array, unknown>>,
      close: () => {
        reader.cancel().catch(() => {});
        reader.releaseLock();
      },
    };
  }
  const it = chunks[Symbol.asyncIterator]();
  return { read: () => it.next(), close: () => void it.return?.()?.catch(() => {}) };
}

function parseLine(text: string, out: unknown[]): void {
  // A blank line (or one of whitespace, e.g. "\r") holds no value.
  if (text.length === 0 || text.trim() === "") return;
  out.push(JSON.parse(text));
}
