// The two relays on their own, against local servers: the CONNECT relay tunnels to the real
// address whatever host is asked for (also through another proxy's CONNECT), and the insecure
// relay turns plain HTTP on a private Unix socket into TLS to a server nobody trusts.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { createCa, issueCert } from "../../util/x509.ts";
import { startInsecureRelay, startSniRelay } from "./_sni_relay.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Reads `conn` until `text` has arrived or it ends; what arrived. */
async function readUntil(conn: Deno.Conn, text: string): Promise<string> {
  const buf = new Uint8Array(4096);
  let got = "";
  while (!got.includes(text)) {
    const n = await conn.read(buf);
    if (n === null) break;
    got += dec.decode(buf.subarray(0, n));
  }
  return got;
}

/** A TCP server on 127.0.0.1 that echoes each connection's bytes back. */
function echoServer(): Deno.Listener & { port: number } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of listener) conn.readable.pipeTo(conn.writable).catch(() => {});
  })().catch(() => {});
  return Object.assign(listener, { port: (listener.addr as Deno.NetAddr).port });
}

/** Opens a CONNECT tunnel through the relay at `url`, naming a host that does not exist. */
async function connectThrough(url: string): Promise<Deno.Conn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
  await conn.write(enc.encode("CONNECT api.invalid:443 HTTP/1.1\r\nHost: api.invalid:443\r\n\r\n"));
  assert.match(await readUntil(conn, "\r\n\r\n"), /^HTTP\/1\.1 200 /);
  return conn;
}

Deno.test("startSniRelay: a CONNECT tunnel goes to the real address, directly or via a proxy", async () => {
  using echo = echoServer();
  const direct = startSniRelay("127.0.0.1", echo.port);
  // The direct relay stands in for an http:// proxy: the second relay reaches it by CONNECT.
  const proxied = startSniRelay("127.0.0.1", echo.port, direct.url);
  try {
    for (const relay of [direct, proxied]) {
      const conn = await connectThrough(relay.url);
      await conn.write(enc.encode("ping\n"));
      assert.equal(await readUntil(conn, "\n"), "ping\n", relay.url);
      conn.close();
    }
    // close() ends the open tunnels too.
    const open = await connectThrough(direct.url);
    direct.close();
    assert.equal(await readUntil(open, "never"), "");
    open.close();
  } finally {
    direct.close();
    proxied.close();
  }
});

Deno.test("startInsecureRelay: plain HTTP on a private socket becomes unverified TLS", async () => {
  const stranger = await createCa("nobody-trusts-me");
  const cert = await issueCert(
    { commonName: "api", dnsNames: ["api.local"], server: true },
    stranger,
  );
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, cert: cert.certPem, key: cert.keyPem },
    (req) => new Response(`served ${new URL(req.url).pathname}`),
  );
  const relay = await startInsecureRelay({
    hostname: "127.0.0.1",
    port: server.addr.port,
    servername: "api.local",
  });
  try {
    assert.equal((await Deno.stat(dirname(relay.path))).mode! & 0o777, 0o700);
    const conn = await Deno.connect({ transport: "unix", path: relay.path });
    await conn.write(
      enc.encode("GET /version HTTP/1.1\r\nHost: api.local\r\nConnection: close\r\n\r\n"),
    );
    const answer = await readUntil(conn, "served /version");
    conn.close();
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /served \/version$/);
  } finally {
    relay.close();
  }
  await assert.rejects(Deno.connect({ transport: "unix", path: relay.path }));
});
