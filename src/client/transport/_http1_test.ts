// The HTTP/1.1 carrier on its own, against local TLS servers: one-shot requests read whole over
// one kept-alive connection, a 2xx stream handed on as it arrives, an abort, a kept-alive
// connection the server closed retried on a new one, and a closed carrier refusing.
import assert from "node:assert/strict";
import { createCa, issueCert } from "../../util/x509.ts";
import { Http1Carrier, type Http1CarrierRequest, type Http1Opened } from "./_http1.ts";
import { TransportError } from "./transport_error.ts";

const CA = await createCa("http1-carrier-test");
const SERVING = await issueCert(
  { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], server: true },
  CA,
);
const TLS = { cert: SERVING.certPem, key: SERVING.keyPem };

/** A GET of `path` with no other header. */
const get = (path: string, more: Partial<Http1CarrierRequest> = {}): Http1CarrierRequest => ({
  method: "GET",
  path,
  headers: [],
  ...more,
});

Deno.test("Http1Carrier: one-shot requests are read whole over one kept-alive connection", async () => {
  const ports = new Set<number>();
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, ...TLS },
    async (req, info) => {
      ports.add((info.remoteAddr as Deno.NetAddr).port);
      const seen = {
        method: req.method,
        path: new URL(req.url).pathname,
        header: req.headers.get("x-test"),
        body: await req.text(),
      };
      return Response.json(seen, { headers: { "X-Answer": "yes" } });
    },
  );
  // The server URL's path prefix is kept, as a Rancher cluster proxy's is.
  const carrier = new Http1Carrier(`https://127.0.0.1:${server.addr.port}/prefix`, [CA.certPem]);
  try {
    const r = await carrier.send(get("/api/v1/a", { headers: [["X-Test", "one"]] }));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-answer"), "yes", "header names in lower case");
    assert.ok("body" in r);
    assert.deepEqual(JSON.parse(r.body), {
      method: "GET",
      path: "/prefix/api/v1/a",
      header: "one",
      body: "",
    });
    const w = await carrier.send({ method: "POST", path: "/b", headers: [], body: '{"n":1}' });
    assert.ok("body" in w);
    assert.deepEqual(JSON.parse(w.body), {
      method: "POST",
      path: "/prefix/b",
      header: null,
      body: '{"n":1}',
    });
    assert.equal(ports.size, 1, "both requests took the same connection");
  } finally {
    carrier.close();
  }
});

Deno.test("Http1Carrier: a 2xx stream arrives as it is written; another status is read whole", async () => {
  let release = () => {};
  const released = new Promise<void>((r) => release = r);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, ...TLS },
    (req) => {
      if (new URL(req.url).pathname !== "/watch") return new Response("gone", { status: 404 });
      const enc = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async start(c) {
          c.enqueue(enc.encode("one\n"));
          await released;
          c.enqueue(enc.encode("two\n"));
          c.close();
        },
      });
      return new Response(body);
    },
  );
  const carrier = new Http1Carrier(`https://127.0.0.1:${server.addr.port}`, [CA.certPem]);
  try {
    const opened = await carrier.send(get("/watch", { stream: true })) as Http1Opened;
    assert.equal(opened.status, 200);
    assert.ok("chunks" in opened);
    const dec = new TextDecoder();
    const it = opened.chunks[Symbol.asyncIterator]();
    // The first piece is handed on while the server still holds back the second.
    let first = "";
    while (!first.includes("\n")) first += dec.decode((await it.next()).value);
    assert.equal(first, "one\n");
    release();
    let rest = "";
    for (let r = await it.next(); !r.done; r = await it.next()) rest += dec.decode(r.value);
    assert.equal(rest, "two\n");

    const missing = await carrier.send(get("/missing", { stream: true })) as Http1Opened;
    assert.equal(missing.status, 404);
    assert.ok("body" in missing);
    assert.equal(missing.body, "gone");
  } finally {
    carrier.close();
  }
});

Deno.test("Http1Carrier: an abort ends a stream with the signal's reason", async () => {
  const stop = new AbortController();
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, signal: stop.signal, ...TLS },
    () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start: (c) => c.enqueue(new TextEncoder().encode("open\n")),
        }),
      ),
  );
  const carrier = new Http1Carrier(`https://127.0.0.1:${server.addr.port}`, [CA.certPem]);
  try {
    const ac = new AbortController();
    const opened = await carrier.send(get("/watch", { stream: true, signal: ac.signal }));
    assert.ok("chunks" in opened);
    const it = opened.chunks[Symbol.asyncIterator]();
    await it.next();
    const reason = new Error("the watch was stopped");
    ac.abort(reason);
    await assert.rejects(it.next(), (e) => e === reason);
  } finally {
    carrier.close();
    stop.abort();
  }
});

Deno.test("Http1Carrier: a kept-alive connection the server closed is retried on a new one", async () => {
  // A server that answers one request per connection and then closes it without saying so,
  // as an idle timeout racing the next request does.
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, ...TLS });
  let accepted = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      accepted++;
      const buf = new Uint8Array(4096);
      let head = "";
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) break;
        head += new TextDecoder().decode(buf.subarray(0, n));
      }
      await conn.write(new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
      conn.close();
    }
  })().catch(() => {});
  const carrier = new Http1Carrier(
    `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    [CA.certPem],
  );
  try {
    for (const path of ["/first", "/second"]) {
      const r = await carrier.send(get(path));
      assert.equal(r.status, 200, path);
      assert.ok("body" in r);
      assert.equal(r.body, "ok", path);
    }
    assert.equal(accepted, 2, "the second request went out again on a new connection");
  } finally {
    carrier.close();
    listener.close();
    await serving;
  }
});

Deno.test("Http1Carrier: a closed carrier refuses with a TransportError", async () => {
  const carrier = new Http1Carrier("https://127.0.0.1:1", []);
  carrier.close();
  await assert.rejects(
    carrier.send(get("/")),
    (e) => e instanceof TransportError && /the client is closed/.test(e.message),
  );
});
