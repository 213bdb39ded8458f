// kubeconfig fields kubectl accepts, each against the real API server (issue 28):
// insecure-skip-tls-verify (the API server and a TLS front whose certificates the client does
// not trust), proxy-url together with tls-server-name (Teleport's `tsh proxy kube` shape,
// through a CONNECT proxy that records what it was asked for), impersonation of a user, uid,
// groups and extra fields (read back from a SelfSubjectReview), disable-compression (a TLS
// front that records the request headers), and the messages client-go gives for v1 exec
// configs without interactiveMode, a missing plugin's installHint and two CAs at once.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { startLagProxy } from "../src/testing/lag_proxy.ts";
import { createClient } from "../src/client/client.ts";
import { loadKubeconfig } from "../src/client/kubeconfig/kubeconfig.ts";
import { KubeconfigError } from "../src/client/kubeconfig/kubeconfig_error.ts";
import { ConnectionError } from "../src/client/errors/api_error.ts";
import { resource } from "../src/core/resource.ts";
import type { KubeObject } from "../src/core/object.ts";
import { createCa, issueCert } from "../src/util/x509.ts";
import { kubeconfigWriter } from "./_helpers.ts";
import { describeError } from "../src/operator/_errors.ts";

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}
interface SelfSubjectReview extends KubeObject {
  status?: { userInfo?: UserInfo };
}
const SelfSubjectReview = resource<SelfSubjectReview>({
  group: "authentication.k8s.io",
  version: "v1",
  kind: "SelfSubjectReview",
  namespaced: false,
});
const ConfigMap = resource<KubeObject & { data?: Record<string, string> }>({
  group: "",
  version: "v1",
  kind: "ConfigMap",
});

const TOKEN = "parity-token-0123456789";
const ADMIN_TOKEN = "parity-admin-token-0123456789";

/** A CONNECT proxy on loopback that records the targets it was asked for. */
function connectProxy(): { url: string; targets: string[]; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const targets: string[] = [];
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const down of listener) {
      conns.add(down);
      (async () => {
        const one = new Uint8Array(1);
        let head = "";
        while (!head.endsWith("\r\n\r\n")) {
          if ((await down.read(one)) === null) return;
          head += String.fromCharCode(one[0]);
        }
        const target = head.match(/^CONNECT (\S+) HTTP/)?.[1];
        if (!target) return;
        targets.push(target);
        const i = target.lastIndexOf(":");
        const up = await Deno.connect({
          hostname: target.slice(0, i),
          port: Number(target.slice(i + 1)),
        });
        conns.add(up);
        await down.write(new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n"));
        await Promise.race([
          down.readable.pipeTo(up.writable, { preventClose: true }),
          up.readable.pipeTo(down.writable, { preventClose: true }),
        ]).catch(() => {});
      })().catch(() => {}).finally(() => {
        for (const c of [down]) {
          try {
            c.close();
          } catch { /* closed */ }
        }
      });
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    targets,
    close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

Deno.test("kubeconfig parity: fields kubectl accepts work against the real API server", async (t) => {
  await using cp = await startControlPlane({
    tokens: [
      { token: TOKEN, user: "parity-user", groups: ["parity-group"] },
      { token: ADMIN_TOKEN, user: "parity-admin", groups: ["system:masters"] },
    ],
  });
  const dir = await Deno.makeTempDir({ prefix: "kubeno-parity-" });
  const caFile = `${dir}/ca.crt`;
  await Deno.writeTextFile(caFile, cp.caCertPem);
  const kubeconfig = kubeconfigWriter(dir, cp.server);
  const review = async (path: string): Promise<UserInfo> => {
    using client = await createClient({ kubeconfig: path });
    const r = await client.create(SelfSubjectReview, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
      metadata: {},
    });
    return r.status?.userInfo ?? {};
  };
  const failure = async (path: string): Promise<Error> => {
    const err = await review(path).catch((e) => e);
    assert.ok(err instanceof Error, `expected a failure, got ${JSON.stringify(err)}`);
    assert.ok(!err.message.includes("\n"), err.message);
    return err;
  };

  await t.step(
    "insecure-skip-tls-verify: an untrusted server certificate is accepted",
    async () => {
      // The API server's own certificate, its CA not given: refused without the field.
      const untrusted = await failure(await kubeconfig({ token: TOKEN }, {}));
      assert.ok(untrusted instanceof ConnectionError, String(untrusted));
      assert.match(untrusted.message, /UnknownIssuer|certificate/);
      const insecure = await kubeconfig({ token: TOKEN }, { "insecure-skip-tls-verify": true });
      assert.equal((await review(insecure)).username, "parity-user");
      // A client certificate is presented through the same path (the relay's own TLS).
      const issued = await Deno.readTextFile(await cp.writeKubeconfig({ user: "insecure-cert" }));
      const field = (name: string) => issued.match(new RegExp(`${name}: (.*)`))![1].trim();
      const certUser = await kubeconfig({
        "client-certificate-data": field("client-certificate-data"),
        "client-key-data": field("client-key-data"),
      }, { "insecure-skip-tls-verify": true });
      assert.equal((await review(certUser)).username, "insecure-cert");
      // A TLS front with its own CA (the lag proxy), and a watch streamed through it.
      await using front = await startLagProxy({ kubeconfig: cp.kubeconfigPath });
      const viaFront = await kubeconfig({ token: TOKEN }, {
        server: front.url,
        "insecure-skip-tls-verify": true,
      });
      assert.equal((await review(viaFront)).username, "parity-user"); // it forwards the token
      using client = await createClient({
        kubeconfig: await kubeconfig({ token: ADMIN_TOKEN }, {
          server: front.url,
          "insecure-skip-tls-verify": true,
        }),
      });
      const ac = new AbortController();
      const events = client.watchEvents(ConfigMap, { namespace: "default", signal: ac.signal });
      const created = client.create(ConfigMap, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "insecure-watch", namespace: "default" },
      });
      for await (const e of events) {
        if (e.type === "ADDED" && e.object.metadata?.name === "insecure-watch") break;
      }
      ac.abort();
      await created;
      // client-go refuses a CA together with the flag.
      const both = await kubeconfig({ token: TOKEN }, {
        "insecure-skip-tls-verify": true,
        "certificate-authority": caFile,
      });
      const err = await loadKubeconfig({ kubeconfig: both }).catch((e) => e);
      assert.ok(err instanceof KubeconfigError, String(err));
      assert.match(err.message, /insecure-skip-tls-verify together with a certificate authority/);
    },
  );

  await t.step("proxy-url with tls-server-name: TLS to that name through CONNECT", async () => {
    const proxy = connectProxy();
    try {
      const ok = await kubeconfig({ token: TOKEN }, {
        "certificate-authority": caFile,
        "tls-server-name": "kubernetes.default.svc",
        "proxy-url": proxy.url,
      });
      assert.equal((await review(ok)).username, "parity-user");
      const port = new URL(cp.server).port;
      assert.deepEqual([...new Set(proxy.targets)], [`127.0.0.1:${port}`]);
      // The certificate is still checked against tls-server-name.
      const wrong = await kubeconfig({ token: TOKEN }, {
        "certificate-authority": caFile,
        "tls-server-name": "wrong.example",
        "proxy-url": proxy.url,
      });
      const err = await failure(wrong);
      assert.ok(err instanceof ConnectionError, String(err));
      assert.match(err.message, /certificate.*wrong\.example/);
      // insecure-skip-tls-verify through the same proxy.
      const before = proxy.targets.length;
      const insecure = await kubeconfig({ token: TOKEN }, {
        "insecure-skip-tls-verify": true,
        "proxy-url": proxy.url,
      });
      assert.equal((await review(insecure)).username, "parity-user");
      assert.ok(proxy.targets.length > before);
      const socks = await kubeconfig({ token: TOKEN }, {
        "certificate-authority": caFile,
        "tls-server-name": "kubernetes.default.svc",
        "proxy-url": "socks5://127.0.0.1:1080",
      });
      const refused = await loadKubeconfig({ kubeconfig: socks }).catch((e) => e);
      assert.ok(refused instanceof KubeconfigError, String(refused));
      assert.match(refused.message, /tls-server-name works with an http:\/\/ proxy only/);
    } finally {
      proxy.close();
    }
  });

  await t.step("as, as-uid, as-groups, as-user-extra: the effective user", async () => {
    // parity-user may impersonate (client-go needs the same RBAC).
    for (
      const [path, body] of [
        ["/apis/rbac.authorization.k8s.io/v1/clusterroles", {
          metadata: { name: "parity-impersonator" },
          rules: [
            {
              apiGroups: [""],
              resources: ["users", "groups", "serviceaccounts"],
              verbs: ["impersonate"],
            },
            {
              apiGroups: ["authentication.k8s.io"],
              resources: ["uids", "userextras/reason", "userextras/example.com/team"],
              verbs: ["impersonate"],
            },
          ],
        }],
        ["/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
          metadata: { name: "parity-impersonator" },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: "parity-impersonator",
          },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "parity-user" }],
        }],
      ] as const
    ) {
      const res = await cp.request("POST", path, body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const path = await kubeconfig({
      token: TOKEN,
      as: "alice",
      "as-uid": "uid-1234",
      "as-groups": ["devs", "on-call"],
      "as-user-extra": { reason: ["incident 42"], "example.com/team": ["a", "b"] },
    }, { "certificate-authority": caFile });
    const info = await review(path);
    assert.equal(info.username, "alice");
    assert.equal(info.uid, "uid-1234");
    assert.deepEqual(info.groups, ["devs", "on-call", "system:authenticated"]);
    assert.deepEqual(info.extra, { reason: ["incident 42"], "example.com/team": ["a", "b"] });
    // Groups without a user to impersonate: refused at load, as client-go's validation does.
    const noUser = await kubeconfig({ token: TOKEN, "as-groups": ["devs"] }, {
      "certificate-authority": caFile,
    });
    const err = await loadKubeconfig({ kubeconfig: noUser }).catch((e) => e);
    assert.ok(err instanceof KubeconfigError, String(err));
    assert.match(err.message, /as-groups or as-user-extra is set without as/);
  });

  await t.step("disable-compression: no gzip asked for", async () => {
    const ca = await createCa("parity-front-ca");
    const serving = await issueCert({
      commonName: "front",
      ipAddresses: ["127.0.0.1"],
      server: true,
    }, ca);
    const upstream = Deno.createHttpClient({ caCerts: [cp.caCertPem] });
    const seen: (string | null)[] = [];
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert: serving.certPem,
      key: serving.keyPem,
      onListen() {},
    }, async (req) => {
      seen.push(req.headers.get("accept-encoding"));
      const url = new URL(req.url);
      const res = await fetch(cp.server + url.pathname + url.search, {
        method: req.method,
        headers: {
          authorization: req.headers.get("authorization") ?? "",
          "content-type": "application/json",
          "accept-encoding": "identity",
        },
        body: req.body,
        client: upstream,
      });
      return new Response(res.body, {
        status: res.status,
        headers: { "content-type": "application/json" },
      });
    });
    try {
      const frontCa = `${dir}/front-ca.crt`;
      await Deno.writeTextFile(frontCa, ca.certPem);
      const front = {
        server: `https://127.0.0.1:${server.addr.port}`,
        "certificate-authority": frontCa,
      };
      assert.equal(
        (await review(await kubeconfig({ token: TOKEN }, front))).username,
        "parity-user",
      );
      assert.match(seen.at(-1) ?? "", /gzip/);
      const off = await kubeconfig({ token: TOKEN }, { ...front, "disable-compression": true });
      assert.equal((await review(off)).username, "parity-user");
      assert.equal(seen.at(-1), "identity");
    } finally {
      await server.shutdown();
      upstream.close();
    }
  });

  await t.step("messages: v1 exec needs interactiveMode, installHint whole, two CAs", async () => {
    const exec = (extra: Record<string, unknown>) =>
      kubeconfig({
        exec: {
          apiVersion: "client.authentication.k8s.io/v1",
          command: `${dir}/no-such-plugin`,
          ...extra,
        },
      }, { "certificate-authority": caFile });
    const noMode = await loadKubeconfig({ kubeconfig: await exec({}) }).catch((e) => e);
    assert.ok(noMode instanceof KubeconfigError, String(noMode));
    assert.match(noMode.message, /no interactiveMode, which v1 requires; set interactiveMode/);
    // AKS's hint: the link is on the last line.
    const hint =
      "kubelogin is not installed which is required to connect to AAD enabled cluster.\n\n" +
      "To learn more, please go to https://aka.ms/aks/kubelogin\n";
    const missing = await exec({ interactiveMode: "Never", installHint: hint });
    const err = await review(missing).catch((e) => e);
    assert.ok(err instanceof KubeconfigError, String(err));
    assert.match(
      err.message,
      /not found: kubelogin is not installed .* https:\/\/aka\.ms\/aks\/kubelogin$/,
    );
    const [line] = describeError(err, false);
    assert.doesNotMatch(line, /fix the file/);
    assert.match(line, /install the plugin or put it on PATH$/);
    const twoCas = await kubeconfig({ token: TOKEN }, {
      "certificate-authority": caFile,
      "certificate-authority-data": btoa(cp.caCertPem),
    });
    const both = await loadKubeconfig({ kubeconfig: twoCas }).catch((e) => e);
    assert.ok(both instanceof KubeconfigError, String(both));
    assert.match(
      both.message,
      /both certificate-authority-data and certificate-authority .*certificate-authority-data.*remove one/,
    );
  });

  await Deno.remove(dir, { recursive: true });
});
