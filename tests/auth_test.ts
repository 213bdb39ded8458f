// Every native authentication form against the real API server: client certificates (files
// and inline data), a static token, a token file rewritten on disk (bound service-account
// tokens, picked up without a restart), an exec plugin (cached until it expires, run again
// after a 401), an auth provider through client-node, and tls-server-name.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { Client, createClient } from "../src/client/client.ts";
import { loadKubeconfig } from "../src/client/kubeconfig/kubeconfig.ts";
import { ConnectionError } from "../src/client/errors/api_error.ts";
import { FILE_REFRESH_MS } from "../src/client/kubeconfig/_credentials.ts";
import { resource } from "../src/core/resource.ts";
import type { KubeObject } from "../src/core/object.ts";
import { type Clock, realClock } from "../src/util/clock.ts";
import { decodeOutput, kubeconfigWriter, waitFor } from "./_helpers.ts";
import { operatorPermissions } from "../src/tool/compile.ts";

const WHOAMI = new URL("./fixtures/whoami.ts", import.meta.url).pathname;

interface SelfSubjectReview extends KubeObject {
  status?: { userInfo?: { username?: string; groups?: string[] } };
}
const SelfSubjectReview = resource<SelfSubjectReview>({
  group: "authentication.k8s.io",
  version: "v1",
  kind: "SelfSubjectReview",
  namespaced: false,
});

const STATIC_TOKEN = "static-token-0123456789";

/** A clock whose `now()` moves only when the test says so. */
function manualClock(): Clock & { advance(ms: number): void } {
  let t = Date.now();
  return { ...realClock, now: () => t, advance: (ms: number) => void (t += ms) };
}

Deno.test("auth: each credential form authenticates to the real API server", async (t) => {
  await using cp = await startControlPlane({
    tokens: [{ token: STATIC_TOKEN, user: "static-user", groups: ["static-group"] }],
  });
  const dir = await Deno.makeTempDir({ prefix: "kubeno-auth-" });
  const caFile = `${dir}/ca.crt`;
  await Deno.writeTextFile(caFile, cp.caCertPem);
  /** Writes a kubeconfig for `user` (a kubeconfig `users[].user` entry) against `cluster`. */
  const kubeconfig = kubeconfigWriter(dir, cp.server, { "certificate-authority": caFile });
  /** Who the API server says the kubeconfig's user is. */
  const whoami = async (path: string): Promise<string> => {
    using client = await createClient({ kubeconfig: path });
    return await whoamiWith(client);
  };
  const whoamiWith = async (client: Client) => {
    const review = await client.create(SelfSubjectReview, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
      metadata: {},
    });
    return review.status?.userInfo?.username ?? "";
  };
  /** A bound token of a new service account (TokenRequest), valid for an hour. */
  const serviceAccountToken = async (name: string): Promise<string> => {
    const sa = await cp.request("POST", "/api/v1/namespaces/default/serviceaccounts", {
      metadata: { name },
    });
    assert.equal(sa.status, 201, JSON.stringify(sa.body));
    const tr = await cp.request(
      "POST",
      `/api/v1/namespaces/default/serviceaccounts/${name}/token`,
      { spec: { expirationSeconds: 3600 } },
    );
    assert.equal(tr.status, 201, JSON.stringify(tr.body));
    return tr.body.status.token;
  };

  await t.step("client certificate from files and from inline data", async () => {
    // A certificate the cluster CA issued, taken from a kubeconfig the control plane wrote.
    const issued = await Deno.readTextFile(await cp.writeKubeconfig({ user: "cert-user" }));
    const field = (name: string) => atob(issued.match(new RegExp(`${name}: (.*)`))![1].trim());
    const cert = { certPem: field("client-certificate-data"), keyPem: field("client-key-data") };
    await Deno.writeTextFile(`${dir}/user.crt`, cert.certPem);
    await Deno.writeTextFile(`${dir}/user.key`, cert.keyPem);
    assert.equal(
      await whoami(
        await kubeconfig({ "client-certificate": "user.crt", "client-key": "user.key" }),
      ),
      "cert-user",
    );
    assert.equal(
      await whoami(
        await kubeconfig({
          "client-certificate-data": btoa(cert.certPem),
          "client-key-data": btoa(cert.keyPem),
        }),
      ),
      "cert-user",
    );
  });

  await t.step("static token", async () => {
    assert.equal(await whoami(await kubeconfig({ token: STATIC_TOKEN })), "static-user");
    const bad = await whoami(await kubeconfig({ token: "wrong" })).catch((e) => e);
    assert.equal(bad.code, 401, String(bad));
  });

  await t.step("a token file rewritten on disk is picked up without a restart", async () => {
    const first = await serviceAccountToken("first");
    const second = await serviceAccountToken("second");
    const tokenFile = `${dir}/token`;
    await Deno.writeTextFile(tokenFile, first);
    const clock = manualClock();
    using client = new Client(
      await loadKubeconfig({ kubeconfig: await kubeconfig({ tokenFile }), clock }),
    );
    assert.equal(await whoamiWith(client), "system:serviceaccount:default:first");
    // The kubelet rotates the token: both stay valid, the new one is read within a minute.
    await Deno.writeTextFile(tokenFile, second);
    assert.equal(await whoamiWith(client), "system:serviceaccount:default:first");
    clock.advance(FILE_REFRESH_MS);
    assert.equal(await whoamiWith(client), "system:serviceaccount:default:second");
    // The token in use is revoked: the 401 makes the client read the file at once.
    await Deno.writeTextFile(tokenFile, await serviceAccountToken("third"));
    const del = await cp.request("DELETE", "/api/v1/namespaces/default/serviceaccounts/second");
    assert.equal(del.status, 200);
    await waitFor(
      async () => (await whoamiWith(client)) === "system:serviceaccount:default:third",
      { what: "the rewritten token file to be used after a 401" },
    );
  });

  await t.step("an exec plugin runs once, is cached until expiry, runs again after", async () => {
    const runs = `${dir}/exec.runs`;
    const tokens = `${dir}/exec.tokens`;
    const expiry = `${dir}/exec.expiry`;
    const script = `${dir}/exec-plugin.sh`;
    // Prints the first line of exec.tokens (removing it) with the expiry from exec.expiry.
    await Deno.writeTextFile(
      script,
      `#!/bin/sh
echo run >> "${runs}"
token=$(head -n 1 "${tokens}")
tail -n +2 "${tokens}" > "${tokens}.rest"; mv "${tokens}.rest" "${tokens}"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}' "$token" "$(cat "${expiry}")"
`,
    );
    await Deno.chmod(script, 0o755);
    const count = async () =>
      (await Deno.readTextFile(runs).catch(() => "")).split("\n").filter(Boolean).length;
    const clock = manualClock();
    const setExpiry = (ms: number) =>
      Deno.writeTextFile(expiry, new Date(clock.now() + ms).toISOString());
    // First run: a token the server rejects (as if revoked); the 401 runs the plugin again.
    await Deno.writeTextFile(tokens, `revoked\n${STATIC_TOKEN}\n${STATIC_TOKEN}\n`);
    await setExpiry(3_600_000);
    const exec = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: script,
      interactiveMode: "Never",
    };
    using client = new Client(
      await loadKubeconfig({ kubeconfig: await kubeconfig({ exec }), clock }),
    );
    assert.equal(await count(), 0);
    assert.equal(await whoamiWith(client), "static-user");
    assert.equal(await count(), 2, "rejected once, run again, request retried");
    for (let i = 0; i < 5; i++) assert.equal(await whoamiWith(client), "static-user");
    clock.advance(3_599_000);
    assert.equal(await whoamiWith(client), "static-user");
    assert.equal(await count(), 2, "cached until its expirationTimestamp");
    clock.advance(1_000);
    assert.equal(await whoamiWith(client), "static-user");
    assert.equal(await count(), 3, "run again once expired");
  });

  await t.step(
    "an exec plugin in a binary's permissions: --allow-run=<plugin> grants it",
    async () => {
      const script = `${dir}/exec-static.sh`;
      await Deno.writeTextFile(
        script,
        `#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"${STATIC_TOKEN}"}}'
`,
      );
      await Deno.chmod(script, 0o755);
      const path = await kubeconfig({
        exec: {
          apiVersion: "client.authentication.k8s.io/v1",
          command: script,
          interactiveMode: "Never",
        },
      });
      // What `kubeno compile` gives the binary, with and without `--allow-run=<plugin>`.
      const whoamiAs = async (run: string[]) => {
        const out = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--quiet",
            ...operatorPermissions({ kubeconfigPaths: [dir], run }),
            WHOAMI,
            path,
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
        return decodeOutput(out);
      };
      const granted = await whoamiAs([script]);
      assert.equal(granted.code, 0, granted.stderr);
      assert.equal(granted.stdout.trim(), "static-user");
      const refused = await whoamiAs([]);
      assert.equal(refused.code, 1);
      assert.equal(refused.stdout, "");
      const lines = refused.stderr.trimEnd().split("\n");
      assert.equal(lines.length, 1, refused.stderr);
      assert.match(lines[0], new RegExp(`--allow-run=${script}.*kubeno compile --allow-run=`));
    },
  );

  await t.step("an auth provider (oidc) goes through client-node", async () => {
    const idToken = await serviceAccountToken("oidc-user");
    const path = await kubeconfig({
      "auth-provider": { name: "oidc", config: { "id-token": idToken, "client-id": "kubeno" } },
    });
    assert.equal(await whoami(path), "system:serviceaccount:default:oidc-user");
  });

  await t.step("tls-server-name is the name the certificate is checked against", async () => {
    const ok = await kubeconfig({ token: STATIC_TOKEN }, {
      "tls-server-name": "kubernetes.default.svc",
    });
    assert.equal(await whoami(ok), "static-user");
    const wrong = await kubeconfig({ token: STATIC_TOKEN }, { "tls-server-name": "wrong.example" });
    const err = await whoami(wrong).catch((e) => e);
    assert.ok(err instanceof ConnectionError, String(err));
    assert.match(err.message, /certificate.*wrong\.example/);
    assert.ok(!err.message.includes("\n"), err.message);
  });

  await Deno.remove(dir, { recursive: true });
});
