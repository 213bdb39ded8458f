/**
 * Incremental newline-delimited JSON parsing for watch streams.
 *
 * @module
 */

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into JSON values, one per line. Bytes are kept as chunks until a
 * newline arrives and each line is decoded once, so the work is linear in the input however
 * the stream is split (even inside a multi-byte character). Blank lines are skipped; a final
 * line without a newline is parsed when the stream ends.
 *
 * @param chunks The byte chunks, in order.
 * @returns The parsed values.
 * @throws {SyntaxError} When a line is not valid JSON.
 */
export async function* parseNdjson(
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<unknown, void, undefined> {
  const decoder = new TextDecoder();
  let pending: Uint8Array[] = [];
  let pendingLength = 0;
  for await (const chunk of chunks) {
    let start = 0;
    let nl = chunk.indexOf(NEWLINE, start);
    while (nl >= 0) {
      const piece = chunk.subarray(start, nl);
      let line: Uint8Array;
      if (pendingLength === 0) {
        line = piece;
      } else {
        line = new Uint8Array(pendingLength + piece.length);
        let off = 0;
        for (const p of pending) {
          line.set(p, off);
          off += p.length;
        }
        line.set(piece, off);
        pending = [];
        pendingLength = 0;
      }
      const value = parseLine(decoder.decode(line));
      if (value !== undefined) yield value;
      start = nl + 1;
      nl = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) {
      // Copy: the stream may reuse the chunk's buffer.
      pending.push(chunk.slice(start));
      pendingLength += chunk.length - start;
    }
  }
  if (pendingLength > 0) {
    const line = new Uint8Array(pendingLength);
    let off = 0;
    for (const p of pending) {
      line.set(p, off);
      off += p.length;
    }
    const value = parseLine(decoder.decode(line));
    if (value !== undefined) yield value;
  }
}

function parseLine(text: string): unknown {
  if (text.trim() === "") return undefined;
  return JSON.parse(text);
}
