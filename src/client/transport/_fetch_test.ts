import assert from "node:assert/strict";
import { cancelledBy } from "./_fetch.ts";

/** A body that sends one chunk and then nothing, recording why it was cancelled. */
function silentAfterOne(): { body: ReadableStream<Uint8Array>; cancelled: unknown[] } {
  const cancelled: unknown[] = [];
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array([1]));
    },
    cancel(reason) {
      cancelled.push(reason);
    },
  });
  return { body, cancelled };
}

Deno.test("cancelledBy: the signal cancels the body under a pending read, and the read throws its reason", async () => {
  const { body, cancelled } = silentAfterOne();
  const ctl = new AbortController();
  const reason = new DOMException("stop", "AbortError");
  const chunks: Uint8Array[] = [];
  const reading = (async () => {
    for await (const chunk of cancelledBy(body, ctl.signal)) {
      chunks.push(chunk);
      queueMicrotask(() => ctl.abort(reason));
    }
  })();
  await assert.rejects(reading, (err) => err === reason);
  assert.equal(chunks.length, 1);
  assert.deepEqual(cancelled, [reason]);
});

Deno.test("cancelledBy: stopping early cancels the body; a body read to its end is left alone", async () => {
  const { body, cancelled } = silentAfterOne();
  for await (const _ of cancelledBy(body, undefined)) break;
  assert.equal(cancelled.length, 1);

  const whole = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array([1]));
      c.close();
    },
    cancel() {
      throw new Error("cancelled after its end");
    },
  });
  const got: Uint8Array[] = [];
  for await (const chunk of cancelledBy(whole, new AbortController().signal)) got.push(chunk);
  assert.equal(got.length, 1);
});
