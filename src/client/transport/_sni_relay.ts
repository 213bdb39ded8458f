// Two relays that give Deno's fetch what `Deno.createHttpClient` lacks.
//
// `tls-server-name` on Deno's fetch. `Deno.createHttpClient` cannot verify a server's
// certificate against a name other than the URL's host, but it tunnels HTTPS through an HTTP
// proxy with CONNECT and runs TLS end to end inside the tunnel. So the transport sends its
// requests to `https://<tls-server-name>:<port>` through this relay: a CONNECT proxy on
// loopback, owned by one transport, that ignores the requested host and opens a plain TCP
// connection to the real server address. TLS (SNI, certificate verification, client
// certificates) stays between fetch and the API server; the relay only copies bytes. With a
// `proxy-url` (http://) the relay opens that connection through the proxy's CONNECT.
//
// `insecure-skip-tls-verify` on Deno's fetch. Deno verifies every certificate a fetch client
// sees; skipping that exists only as a process flag (`--unsafely-ignore-certificate-errors`).
// `node:tls` connects with `rejectUnauthorized: false`, so the insecure relay runs TLS itself:
// fetch speaks plain HTTP/1.1 over a Unix socket in a private (0700) temporary folder, and the
// relay copies each connection into a `node:tls` connection to the server (through the proxy
// when there is one), presenting the client certificate of its transport client.
import { TransportError } from "./transport_error.ts";

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
export function startSniRelay(hostname: string, port: number, proxy?: string): SniRelay {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  listener.unref(); // an unclosed client must not keep the process alive
  const open = new Set<Deno.Conn>();
  const serve = async () => {
    for await (const conn of listener) {
      open.add(conn);
      tunnel(conn, hostname, port, open, proxy).catch(() => {}).finally(() => {
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

/** What the insecure relay connects to and presents. */
export interface InsecureTarget {
  hostname: string;
  port: number;
  /** SNI to send: `tls-server-name`, else the server's host name (none for an IP). */
  servername: string | undefined;
  /** PEM client certificate and key. */
  cert?: string;
  key?: string;
  /** An http:// proxy URL to tunnel through. */
  proxy?: string;
}

/** A running insecure relay: a Unix socket for `Deno.createHttpClient`'s `unix` proxy. */
export interface InsecureRelay {
  readonly path: string;
  close(): void;
}

/**
 * Starts a relay that runs TLS to `target` without verifying the server's certificate.
 *
 * @param target The server, SNI, client certificate and proxy.
 * @returns The relay.
 */
export async function startInsecureRelay(target: InsecureTarget): Promise<InsecureRelay> {
  const tls = await import("node:tls");
  const net = await import("node:net");
  const dir = await Deno.makeTempDir({ prefix: "kubeno-tls-" });
  await Deno.chmod(dir, 0o700);
  const path = `${dir}/relay.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  listener.unref();
  const open = new Set<{ close(): void }>();
  const upstream = async () => {
    let socket: import("node:net").Socket | undefined;
    if (target.proxy) {
      const p = new URL(target.proxy);
      socket = net.connect({
        host: p.hostname.replace(/^\[|\]$/g, ""),
        port: Number(p.port || 80),
      });
      await new Promise<void>((resolve, reject) => {
        socket!.once("connect", resolve).once("error", reject);
      });
      socket.write(connectRequest(target.hostname, target.port, p));
      const head = await readHead(socket);
      if (!/^HTTP\/1\.[01] 200/.test(head)) {
        socket.destroy();
        throw new TransportError(`proxy refused CONNECT: ${head.split("\r\n")[0]}`);
      }
    }
    const conn = tls.connect({
      ...(socket ? { socket } : { host: target.hostname, port: target.port }),
      servername: target.servername,
      rejectUnauthorized: false,
      ALPNProtocols: ["http/1.1"],
      ...(target.cert && target.key ? { cert: target.cert, key: target.key } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      conn.once("secureConnect", resolve).once("error", reject);
    });
    return conn;
  };
  const relay = async (down: Deno.Conn) => {
    const up = await upstream();
    const handle = { close: () => up.destroy() };
    open.add(handle);
    try {
      const done = new Promise<void>((resolve) => up.once("close", () => resolve()));
      // Writes are chained so that the last bytes reach fetch before `down` is closed.
      let writing = Promise.resolve();
      up.on("data", (chunk: Uint8Array) => {
        up.pause();
        writing = writing.then(() => writeAll(down, chunk)).then(
          () => void up.resume(),
          () => void up.destroy(),
        );
      });
      up.on("error", () => {});
      const copy = (async () => {
        for await (const chunk of down.readable) {
          if (!up.write(chunk)) await new Promise((r) => up.once("drain", r));
        }
        up.end();
      })().catch(() => up.destroy());
      await Promise.race([done, copy.then(() => done)]);
      await writing;
    } finally {
      open.delete(handle);
      up.destroy();
    }
  };
  (async () => {
    for await (const conn of listener) {
      const handle = { close: () => conn.close() };
      open.add(handle);
      relay(conn).catch(() => {}).finally(() => {
        open.delete(handle);
        try {
          conn.close();
        } catch { /* closed */ }
      });
    }
  })().catch(() => {});
  return {
    path,
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
      Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** The CONNECT request to a proxy, with basic auth from its URL's user info. */
function connectRequest(hostname: string, port: number, proxy: URL): string {
  const host = hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
  let auth = "";
  if (proxy.username || proxy.password) {
    const raw = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
    auth = `Proxy-Authorization: Basic ${btoa(raw)}\r\n`;
  }
  return `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`;
}

/** Reads a node socket up to the end of an HTTP response head. */
function readHead(socket: import("node:net").Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Uint8Array) => {
      text += new TextDecoder().decode(chunk);
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.pause();
      const rest = text.slice(end + 4);
      if (rest) socket.unshift(new TextEncoder().encode(rest));
      resolve(text.slice(0, end));
    };
    socket.on("data", onData).once("error", reject).once(
      "close",
      () => reject(new TransportError("proxy closed the connection")),
    );
  });
}

async function tunnel(
  client: Deno.Conn,
  hostname: string,
  port: number,
  open: Set<Deno.Conn>,
  proxy: string | undefined,
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
  const upstream = proxy
    ? await throughProxy(hostname, port, new URL(proxy))
    : await Deno.connect({ hostname, port });
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

/** A TCP connection to `hostname:port` through an http:// proxy's CONNECT. */
async function throughProxy(hostname: string, port: number, proxy: URL): Promise<Deno.Conn> {
  const conn = await Deno.connect({
    hostname: proxy.hostname.replace(/^\[|\]$/g, ""),
    port: Number(proxy.port || 80),
  });
  try {
    await writeAll(conn, new TextEncoder().encode(connectRequest(hostname, port, proxy)));
    // Read byte by byte up to the blank line: nothing of the tunnel may be consumed here.
    const one = new Uint8Array(1);
    let head = "";
    while (!head.endsWith("\r\n\r\n")) {
      if (head.length > 16384 || (await conn.read(one)) === null) {
        throw new TransportError("proxy closed the connection");
      }
      head += String.fromCharCode(one[0]);
    }
    if (!/^HTTP\/1\.[01] 200/.test(head)) {
      throw new TransportError(`proxy refused CONNECT: ${head.split("\r\n")[0]}`);
    }
    return conn;
  } catch (e) {
    conn.close();
    throw e;
  }
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await conn.write(data.subarray(off));
}
