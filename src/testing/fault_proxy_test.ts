import assert from "node:assert/strict";
import { startFaultProxy } from "./fault_proxy.ts";

/** An upstream that echoes every byte back. */
function echoServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const done = (async () => {
    for await (const c of listener) {
      conns.add(c);
      c.readable.pipeTo(c.writable).catch(() => {}).finally(() => conns.delete(c));
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    conns,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await done;
    },
  };
}

/** Collects everything a connection receives, without ever abandoning a read. */
function collect(conn: Deno.Conn) {
  const state = { text: "", closed: false };
  (async () => {
    const buf = new Uint8Array(1024);
    try {
      for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
        state.text += new TextDecoder().decode(buf.subarray(0, n));
      }
    } catch { /* reset */ }
    state.closed = true;
  })();
  return state;
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("Timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

const enc = new TextEncoder();

Deno.test("FaultProxy forwards bytes, stalls and resumes, drops and counts connections", async () => {
  await using upstream = echoServer();
  await using proxy = await startFaultProxy({ target: `https://127.0.0.1:${upstream.port}` });
  assert.equal(proxy.url, `https://127.0.0.1:${proxy.port}`);
  const a = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  const ra = collect(a);
  await a.write(enc.encode("ping"));
  await waitFor(() => ra.text === "ping");
  assert.equal(proxy.openConnections, 1);

  assert.equal(proxy.stall(true), 1);
  assert.equal(proxy.stalledConnections, 1);
  await a.write(enc.encode("held"));
  // A connection made after the stall works.
  const b = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  const rb = collect(b);
  await b.write(enc.encode("b"));
  await waitFor(() => rb.text === "b");
  assert.equal(proxy.openConnections, 2);
  assert.equal(proxy.stalledConnections, 1);
  // Proving that nothing arrives needs a window of time; 200 ms is ample on loopback.
  await tick(200);
  assert.equal(ra.text, "ping", "nothing forwarded while stalled");
  assert.equal(proxy.stall(false), 1);
  await waitFor(() => ra.text === "pingheld");

  assert.equal(proxy.dropAll(), 2);
  assert.equal(proxy.openConnections, 0);
  await waitFor(() => ra.closed && rb.closed);
  await waitFor(() => upstream.conns.size === 0);
  assert.equal(proxy.acceptedConnections, 2);
  a.close();
  b.close();
});

Deno.test("FaultProxy closes connections whose upstream is down and counts them", async () => {
  const dead = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = dead.addr.port;
  dead.close();
  await using proxy = await startFaultProxy({ target: `127.0.0.1:${port}` });
  for (let i = 0; i < 3; i++) {
    const c = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    const r = collect(c);
    await waitFor(() => r.closed);
    c.close();
  }
  assert.equal(proxy.acceptedConnections, 3);
  assert.equal(proxy.upstreamFailures, 3);
  assert.equal(proxy.openConnections, 0);
});

Deno.test("startFaultProxy() rejects a target without a port", async () => {
  await assert.rejects(startFaultProxy({ target: "tcp://127.0.0.1" }), /has no port/);
});
