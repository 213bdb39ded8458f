// `tls-server-name` on Deno's fetch. `Deno.createHttpClient` cannot verify a server's
// certificate against a name other than the URL's host, but it tunnels HTTPS through an HTTP
// proxy with CONNECT and runs TLS end to end inside the tunnel. So the transport sends its
// requests to `https://<tls-server-name>:<port>` through this relay: a CONNECT proxy on
// loopback, owned by one transport, that ignores the requested host and opens a plain TCP
// connection to the real server address. TLS (SNI, certificate verification, client
// certificates) stays between fetch and the API server; the relay only copies bytes.

/** A running relay; `close()` stops listening and ends open tunnels. */
export interface SniRelay {
  /** The proxy URL for `Deno.createHttpClient({ proxy: { url } })`. */
  readonly url: string;
  close(): void;
}

/**
 * Starts a relay to `hostname:port`.
 *
 * @param hostname The API server's real host (name or IP, without brackets).
 * @param port Its port.
 * @returns The relay.
 */
export function startSniRelay(hostname: string, port: number): SniRelay {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  listener.unref(); // an unclosed client must not keep the process alive
  const open = new Set<Deno.Conn>();
  const serve = async () => {
    for await (const conn of listener) {
      open.add(conn);
      tunnel(conn, hostname, port, open).catch(() => {}).finally(() => {
        open.delete(conn);
        try {
          conn.close();
        } catch { /* already closed */ }
      });
    }
  };
  serve().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    close() {
      try {
        listener.close();
      } catch { /* closed */ }
      for (const c of open) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      open.clear();
    },
  };
}

async function tunnel(
  client: Deno.Conn,
  hostname: string,
  port: number,
  open: Set<Deno.Conn>,
): Promise<void> {
  // Read the CONNECT request head; fetch sends nothing else before the 200.
  const buf = new Uint8Array(8192);
  let len = 0;
  while (true) {
    const n = await client.read(buf.subarray(len));
    if (n === null) return;
    len += n;
    const head = new TextDecoder().decode(buf.subarray(0, len));
    if (head.includes("\r\n\r\n")) {
      if (!head.startsWith("CONNECT ")) return;
      break;
    }
    if (len === buf.length) return;
  }
  const upstream = await Deno.connect({ hostname, port });
  open.add(upstream);
  try {
    await writeAll(client, new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n"));
    await Promise.race([
      client.readable.pipeTo(upstream.writable, { preventClose: true }),
      upstream.readable.pipeTo(client.writable, { preventClose: true }),
    ]);
  } finally {
    open.delete(upstream);
    try {
      upstream.close();
    } catch { /* closed */ }
  }
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await conn.write(data.subarray(off));
}
