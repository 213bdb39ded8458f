/**
 * Streams to pods, as kubectl and kube-rs open them: `exec` and `attach` over the WebSocket
 * channel protocol (`v5.channel.k8s.io`, falling back to `v4.channel.k8s.io`), `portForward`
 * (a local listener, one WebSocket per connection) and `logs` with `follow`. They go through
 * the client's transport, so they carry the kubeconfig's credentials and TLS settings.
 *
 * The channel protocol: each binary frame starts with a channel byte — 0 stdin, 1 stdout,
 * 2 stderr, 3 the error channel (a `Status`: `Success`, or `NonZeroExitCode` with the exit
 * code as a cause), 4 terminal resize; v5 adds 255, a close of one channel (stdin's end).
 * Port forwarding uses two channels per port, data and error, each starting with the port
 * number (two bytes, little endian).
 *
 * @module
 */
import type { Transport } from "./transport/transport.ts";

/** Subprotocols offered for exec and attach, preferred first. */
export const EXEC_PROTOCOLS: readonly string[] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/** Options of {@linkcode podLogs}. */
export interface LogOptions {
  /**
   * The container.
   * @default the pod's only container
   */
  container?: string;
  /**
   * Keep the stream open and yield lines as the container writes them.
   * @default false
   */
  follow?: boolean;
  /** Only the last lines. */
  tailLines?: number;
  /** Only lines newer than this. */
  sinceSeconds?: number;
  /**
   * Prefix each line with its RFC 3339 timestamp.
   * @default false
   */
  timestamps?: boolean;
  /**
   * The previous, terminated container's log.
   * @default false
   */
  previous?: boolean;
  /** Ends the stream. */
  signal?: AbortSignal;
}

/** Options of {@linkcode podExec} and {@linkcode podAttach}. */
export interface ExecOptions {
  /**
   * The container.
   * @default the pod's only container
   */
  container?: string;
  /**
   * Open stdin (write with {@linkcode PodStream.write}).
   * @default false
   */
  stdin?: boolean;
  /**
   * Read the command's standard output.
   * @default true
   */
  stdout?: boolean;
  /**
   * Read its standard error.
   * @default true (false with `tty`)
   */
  stderr?: boolean;
  /**
   * Allocate a terminal.
   * @default false
   */
  tty?: boolean;
  /**
   * Subprotocols to offer, preferred first.
   * @default EXEC_PROTOCOLS
   */
  protocols?: readonly string[];
}

/** How an exec or attach ended, from the error channel. */
export interface ExecResult {
  /** The exit code: 0 on `Success`, the cause of `NonZeroExitCode`; undefined otherwise. */
  exitCode?: number;
  /** The Status message when the command did not run or failed to start. */
  message?: string;
  /** The Status as sent, if any. */
  status?: Record<string, unknown>;
}

/** An open exec or attach session. */
export interface PodStream {
  /** The negotiated subprotocol, e.g. `v5.channel.k8s.io`. */
  readonly protocol: string;
  /** The command's standard output. */
  readonly stdout: ReadableStream<Uint8Array>;
  /** Its standard error. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** Writes to stdin. */
  write(data: Uint8Array | string): void;
  /** Ends stdin (v5 only: v4 cannot, short of closing the session). */
  closeStdin(): void;
  /** Resolves when the session ends. */
  readonly result: Promise<ExecResult>;
  /** Closes the session. */
  close(): void;
}

/**
 * Streams a container's log, line by line.
 *
 * @param transport The client's transport.
 * @param namespace The pod's namespace.
 * @param pod The pod's name.
 * @param options Container, follow, tail, since, timestamps, signal.
 * @returns The lines, without their newline.
 * @throws {ApiError} When the API server refuses (e.g. 404, 400 for a wrong container).
 */
export async function* podLogs(
  transport: Transport,
  namespace: string,
  pod: string,
  options: LogOptions = {},
): AsyncGenerator<string, void, undefined> {
  const q = new URLSearchParams();
  if (options.container) q.set("container", options.container);
  if (options.follow) q.set("follow", "true");
  if (options.tailLines !== undefined) q.set("tailLines", String(options.tailLines));
  if (options.sinceSeconds !== undefined) q.set("sinceSeconds", String(options.sinceSeconds));
  if (options.timestamps) q.set("timestamps", "true");
  if (options.previous) q.set("previous", "true");
  const path = `${podPath(namespace, pod)}/log${q.size ? `?${q}` : ""}`;
  const spec = {
    method: "GET" as const,
    path,
    accept: "*/*",
    acceptEncoding: "identity",
    target: {
      verb: "get",
      kind: "Pod",
      apiVersion: "v1",
      plural: "pods",
      namespace,
      name: pod,
      subresource: "log",
    },
    signal: options.signal,
    timeoutMs: options.follow ? null : undefined,
  };
  const res = await transport.send(spec);
  const decoder = new TextDecoder();
  let rest = "";
  try {
    for await (const chunk of res.body!) {
      rest += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = rest.indexOf("\n")) >= 0) {
        yield rest.slice(0, nl);
        rest = rest.slice(nl + 1);
      }
    }
  } catch (e) {
    throw transport.networkError(spec, e);
  }
  rest += decoder.decode();
  if (rest) yield rest;
}

/**
 * Runs a command in a container.
 *
 * @param transport The client's transport.
 * @param namespace The pod's namespace.
 * @param pod The pod's name.
 * @param command The command and its arguments.
 * @param options Container, which streams, tty, subprotocols.
 * @returns The session.
 * @throws {ConnectionError} When the WebSocket handshake fails (e.g. a 403 or 404).
 */
export function podExec(
  transport: Transport,
  namespace: string,
  pod: string,
  command: readonly string[],
  options: ExecOptions = {},
): Promise<PodStream> {
  if (command.length === 0) throw new TypeError("Cannot exec: the command is empty");
  return open(transport, namespace, pod, "exec", command, options);
}

/**
 * Attaches to a container's running process (its stdin, stdout and stderr).
 *
 * @param transport The client's transport.
 * @param namespace The pod's namespace.
 * @param pod The pod's name.
 * @param options Container, which streams, tty, subprotocols.
 * @returns The session.
 * @throws {ConnectionError} When the WebSocket handshake fails.
 */
export function podAttach(
  transport: Transport,
  namespace: string,
  pod: string,
  options: ExecOptions = {},
): Promise<PodStream> {
  return open(transport, namespace, pod, "attach", [], options);
}

async function open(
  transport: Transport,
  namespace: string,
  pod: string,
  verb: "exec" | "attach",
  command: readonly string[],
  options: ExecOptions,
): Promise<PodStream> {
  const tty = options.tty ?? false;
  const q = new URLSearchParams();
  for (const c of command) q.append("command", c);
  if (options.container) q.set("container", options.container);
  q.set("stdin", String(options.stdin ?? false));
  q.set("stdout", String(options.stdout ?? true));
  q.set("stderr", String(options.stderr ?? !tty));
  q.set("tty", String(tty));
  const ws = await transport.webSocket(
    `${podPath(namespace, pod)}/${verb}?${q}`,
    [...(options.protocols ?? EXEC_PROTOCOLS)],
  );
  const out = new TransformStream<Uint8Array, Uint8Array>();
  const err = new TransformStream<Uint8Array, Uint8Array>();
  const outW = out.writable.getWriter();
  const errW = err.writable.getWriter();
  let status: Record<string, unknown> | undefined;
  let statusText = "";
  const { promise: result, resolve } = Promise.withResolvers<ExecResult>();
  ws.onmessage = (e) => {
    const data = e.data instanceof ArrayBuffer
      ? new Uint8Array(e.data)
      : new TextEncoder().encode(String(e.data));
    if (data.length === 0) return;
    const payload = data.subarray(1);
    if (data[0] === 1) outW.write(payload).catch(() => {});
    else if (data[0] === 2) errW.write(payload).catch(() => {});
    else if (data[0] === 3) statusText += new TextDecoder().decode(payload);
  };
  ws.onclose = (e) => {
    outW.close().catch(() => {});
    errW.close().catch(() => {});
    try {
      if (statusText) status = JSON.parse(statusText);
    } catch { /* not a Status: reported as the message */ }
    resolve(toResult(status, statusText, e.reason));
  };
  const v5 = ws.protocol === "v5.channel.k8s.io";
  return {
    protocol: ws.protocol,
    stdout: out.readable,
    stderr: err.readable,
    write(data) {
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      const frame = new Uint8Array(bytes.length + 1);
      frame.set(bytes, 1);
      ws.send(frame);
    },
    closeStdin() {
      if (v5) ws.send(new Uint8Array([255, 0]));
    },
    result,
    close() {
      ws.close();
    },
  };
}

function toResult(
  status: Record<string, unknown> | undefined,
  text: string,
  reason: string,
): ExecResult {
  if (!status) return { message: text || reason || "the session closed without a status" };
  if (status.status === "Success") return { exitCode: 0, status };
  const details = status.details as
    | { causes?: { reason?: string; message?: string }[] }
    | undefined;
  const code = details?.causes?.find((c) => c.reason === "ExitCode")?.message;
  if (status.reason === "NonZeroExitCode" && code !== undefined) {
    return { exitCode: Number(code), message: String(status.message ?? ""), status };
  }
  return { message: String(status.message ?? text), status };
}

/** Options of {@linkcode podPortForward}. */
export interface PortForwardOptions {
  /**
   * Local port; 0 picks a free one.
   * @default 0
   */
  localPort?: number;
  /**
   * Local address to listen on.
   * @default "127.0.0.1"
   */
  hostname?: string;
}

/** A running port forward. */
export interface PortForward {
  /** The local port. */
  readonly port: number;
  /** Stops listening and ends open connections. */
  close(): void;
}

/**
 * Forwards a local port to a pod's port: each local connection opens its own WebSocket
 * (`v4.channel.k8s.io`, `/portforward?ports=<port>`), its data channel copied both ways.
 *
 * @param transport The client's transport.
 * @param namespace The pod's namespace.
 * @param pod The pod's name.
 * @param remotePort The pod's port.
 * @param options Local port and address.
 * @returns The listener.
 */
export function podPortForward(
  transport: Transport,
  namespace: string,
  pod: string,
  remotePort: number,
  options: PortForwardOptions = {},
): PortForward {
  const listener = Deno.listen({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.localPort ?? 0,
  });
  const open = new Set<{ close(): void }>();
  const forward = async (conn: Deno.Conn) => {
    const ws = await transport.webSocket(
      `${podPath(namespace, pod)}/portforward?ports=${remotePort}`,
      ["v4.channel.k8s.io"],
    );
    const handle = { close: () => ws.close() };
    open.add(handle);
    try {
      const skip = [2, 2]; // each channel starts with its port number
      const closed = new Promise<void>((resolve) => ws.onclose = () => resolve());
      let writing = Promise.resolve();
      ws.onmessage = (e) => {
        const data = new Uint8Array(e.data as ArrayBuffer);
        const ch = data[0];
        let payload = data.subarray(1);
        if (ch > 1) return;
        const n = Math.min(skip[ch], payload.length);
        skip[ch] -= n;
        payload = payload.subarray(n);
        if (ch === 0 && payload.length) {
          const copy = payload.slice();
          writing = writing.then(() => writeAll(conn, copy));
        }
      };
      const up = (async () => {
        for await (const chunk of conn.readable) {
          const frame = new Uint8Array(chunk.length + 1);
          frame.set(chunk, 1);
          ws.send(frame);
        }
        ws.close();
      })().catch(() => ws.close());
      await Promise.race([closed, up.then(() => closed)]);
      await writing.catch(() => {});
    } finally {
      open.delete(handle);
      ws.close();
    }
  };
  (async () => {
    for await (const conn of listener) {
      forward(conn).catch(() => {}).finally(() => {
        try {
          conn.close();
        } catch { /* closed */ }
      });
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close() {
      try {
        listener.close();
      } catch { /* closed */ }
      for (const h of open) h.close();
      open.clear();
    },
  };
}

function podPath(namespace: string, pod: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}`;
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await conn.write(data.subarray(off));
}
