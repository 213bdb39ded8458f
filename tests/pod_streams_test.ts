// Pod streams through the real API server to a stand-in kubelet: a Node whose address is
// 127.0.0.1 and whose kubelet port is a local HTTPS server of this test, so the API server's
// own pod subresource proxy (logs, exec, port-forward) reaches code we control. kwok pods have
// no processes and there is no container runtime here: the stand-in answers as a kubelet
// would on the wire (log lines; the v4 channel protocol over WebSocket), which is what the
// client sees. Not exercised: the v5 protocol end to end (the API server translates v5 to
// SPDY toward the kubelet, which the stand-in does not speak: the test shows the handshake
// and the error Status the API server sends on the status channel instead), a real process
// behind exec and attach (the stand-in echoes stdin for attach), and a real container
// runtime's port-forward.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient } from "../src/client/client.ts";
import { createCa, issueCert } from "../src/util/x509.ts";

Deno.test("pod streams: logs, exec, attach and port-forward through the API server", async (t) => {
  await using cp = await startControlPlane();
  const ca = await createCa("stand-in-kubelet");
  const serving = await issueCert(
    { commonName: "kubelet", ipAddresses: ["127.0.0.1"], server: true },
    ca,
  );
  const seen: string[] = [];
  // The pod's "port 8080": a plain HTTP server the stand-in kubelet forwards to.
  const app = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => new Response(`hello from ${new URL(req.url).pathname}`),
  );
  const kubelet = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: serving.certPem,
    key: serving.keyPem,
    onListen() {},
  }, (req) => {
    const url = new URL(req.url);
    seen.push(`${url.pathname} ${req.headers.get("upgrade") ?? ""}`);
    if (url.pathname.startsWith("/containerLogs/")) {
      const follow = url.searchParams.get("follow") === "true";
      const body = new ReadableStream<Uint8Array>({
        async start(c) {
          c.enqueue(new TextEncoder().encode("line 1\nline 2\n"));
          if (follow) {
            await new Promise((r) => setTimeout(r, 50));
            c.enqueue(new TextEncoder().encode("line 3 (followed)\n"));
          }
          c.close();
        },
      });
      return new Response(body);
    }
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("stand-in kubelet speaks no SPDY", { status: 400 });
    }
    const protocol = req.headers.get("sec-websocket-protocol")?.split(",").map((s) => s.trim());
    const { socket, response } = Deno.upgradeWebSocket(req, { protocol: protocol?.[0] });
    socket.binaryType = "arraybuffer";
    const frame = (ch: number, data: Uint8Array | string) => {
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      const f = new Uint8Array(bytes.length + 1);
      f[0] = ch;
      f.set(bytes, 1);
      socket.send(f);
    };
    if (url.pathname.startsWith("/exec/")) {
      socket.onopen = () => {
        const command = url.searchParams.getAll("command").join(" ");
        frame(1, `ran: ${command}\n`);
        frame(2, "a warning\n");
        frame(
          3,
          JSON.stringify({
            kind: "Status",
            apiVersion: "v1",
            status: "Failure",
            reason: "NonZeroExitCode",
            message: "command terminated with non-zero exit code: 3",
            details: { causes: [{ reason: "ExitCode", message: "3" }] },
          }),
        );
        socket.close();
      };
    } else if (url.pathname.startsWith("/attach/")) {
      // The attached process: echoes each stdin line back on stdout, exits 0 after "bye".
      let pending = "";
      socket.onmessage = (e) => {
        const data = new Uint8Array(e.data as ArrayBuffer);
        if (data[0] !== 0) return;
        pending += new TextDecoder().decode(data.subarray(1));
        for (let i = pending.indexOf("\n"); i >= 0; i = pending.indexOf("\n")) {
          const line = pending.slice(0, i);
          pending = pending.slice(i + 1);
          frame(1, `echo: ${line}\n`);
          if (line === "bye") {
            frame(3, JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Success" }));
            socket.close();
          }
        }
      };
    } else if (url.pathname.startsWith("/portForward/")) {
      const port = Number(url.searchParams.get("port") ?? url.searchParams.get("ports"));
      let conn: Deno.Conn | undefined;
      socket.onopen = async () => {
        const p = new Uint8Array([port & 0xff, port >> 8]);
        frame(0, p);
        frame(1, p);
        conn = await Deno.connect({ hostname: "127.0.0.1", port: app.addr.port });
        (async () => {
          for await (const chunk of conn!.readable) frame(0, chunk);
          socket.close();
        })().catch(() => {});
      };
      socket.onmessage = async (e) => {
        const data = new Uint8Array(e.data as ArrayBuffer);
        while (!conn) await new Promise((r) => setTimeout(r, 5));
        if (data[0] === 0) await conn.write(data.subarray(1));
      };
      socket.onclose = () => conn?.close();
    }
    return response;
  });
  try {
    // A node the API server reaches at the stand-in, and a pod bound to it.
    assert.equal(
      (await cp.request("POST", "/api/v1/nodes", { metadata: { name: "stand-in" } })).status,
      201,
    );
    const node = (await cp.request("GET", "/api/v1/nodes/stand-in")).body;
    node.status = {
      addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
      daemonEndpoints: { kubeletEndpoint: { Port: kubelet.addr.port } },
    };
    assert.equal((await cp.request("PUT", "/api/v1/nodes/stand-in/status", node)).status, 200);
    // No controller-manager here: the ServiceAccount admission needs the default one.
    await cp.request("POST", "/api/v1/namespaces/default/serviceaccounts", {
      metadata: { name: "default" },
    });
    const pod = await cp.request("POST", "/api/v1/namespaces/default/pods", {
      metadata: { name: "web" },
      spec: { nodeName: "stand-in", containers: [{ name: "app", image: "app:1" }] },
    });
    assert.equal(pod.status, 201, JSON.stringify(pod.body));
    using client = await createClient({ kubeconfig: cp.kubeconfigPath });

    await t.step("logs, and logs with follow", async () => {
      const lines: string[] = [];
      for await (const l of client.logs("default", "web")) lines.push(l);
      assert.deepEqual(lines, ["line 1", "line 2"]);
      const followed: string[] = [];
      for await (const l of client.logs("default", "web", { follow: true, container: "app" })) {
        followed.push(l);
      }
      assert.deepEqual(followed, ["line 1", "line 2", "line 3 (followed)"]);
      assert.ok(seen.some((s) => s.startsWith("/containerLogs/default/web/app")), seen.join("; "));
    });

    await t.step("exec over v4.channel.k8s.io: stdout, stderr, exit code", async () => {
      const s = await client.exec("default", "web", ["sh", "-c", "exit 3"], {
        protocols: ["v4.channel.k8s.io"],
      });
      assert.equal(s.protocol, "v4.channel.k8s.io");
      const [out, err, result] = await Promise.all([
        new Response(s.stdout).text(),
        new Response(s.stderr).text(),
        s.result,
      ]);
      assert.equal(out, "ran: sh -c exit 3\n");
      assert.equal(err, "a warning\n");
      assert.equal(result.exitCode, 3);
    });

    await t.step(
      "exec offers v5 first: the API server takes it and reports on channel 3",
      async () => {
        const s = await client.exec("default", "web", ["true"]);
        assert.equal(s.protocol, "v5.channel.k8s.io");
        const result = await s.result;
        // The API server translated to SPDY, which the stand-in refused: a Status, no exit code.
        assert.equal(result.exitCode, undefined);
        assert.ok(result.message, JSON.stringify(result));
      },
    );

    await t.step("attach over v4.channel.k8s.io: stdin in, stdout back, exit 0", async () => {
      const s = await client.attach("default", "web", {
        stdin: true,
        protocols: ["v4.channel.k8s.io"],
      });
      assert.equal(s.protocol, "v4.channel.k8s.io");
      const out = new Response(s.stdout).text();
      s.write("hello\n");
      s.write(new TextEncoder().encode("bye\n"));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          s.close();
          reject(new Error("The attached process did not answer stdin within 20 s"));
        }, 20_000);
      });
      const [text, result] = await Promise.race([Promise.all([out, s.result]), deadline])
        .finally(() => clearTimeout(timer));
      assert.equal(text, "echo: hello\necho: bye\n");
      assert.equal(result.exitCode, 0);
      assert.ok(
        seen.some((l) => l.startsWith("/attach/default/web/app") && /websocket/i.test(l)),
        seen.join("; "),
      );
    });

    await t.step("exec to a pod that does not exist fails the handshake", async () => {
      const err = await client.exec("default", "nope", ["true"]).catch((e) => e);
      assert.ok(err instanceof Error, String(err));
    });

    await t.step("port-forward: a local port reaches the pod's port", async () => {
      const pf = client.portForward("default", "web", 8080);
      try {
        const res = await fetch(`http://127.0.0.1:${pf.port}/through-the-tunnel`);
        assert.equal(await res.text(), "hello from /through-the-tunnel");
      } finally {
        pf.close();
      }
    });
  } finally {
    await kubelet.shutdown();
    await app.shutdown();
  }
});
