// Admission webhooks against a real kube-apiserver: the operator's HTTPS server on
// 127.0.0.1, registered with URL-based configurations (as envtest does). Denials, defaults,
// warnings, old objects on update, dry runs, a webhook that is down, certificate renewal
// under load with caBundle following, and a supplied certificate directory reloaded.
import assert from "node:assert/strict";
import tls from "node:tls";
import { z } from "zod";
import { startControlPlane } from "../testing.ts";
import { admission, AdmissionDenied } from "../src/webhook/admission.ts";
import { ApiError } from "../src/client/errors/api_error.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { defineResource } from "../src/schema/define_resource.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import { createCa, issueCert } from "../src/util/x509.ts";
import { serveWebhooks } from "../src/webhook/webhooks.ts";
import { readCaBundle, registerWebhooks } from "../src/webhook/register.ts";
import { waitFor } from "./_helpers.ts";

const Myapp = defineResource({
  group: "apps.kubeno.dev",
  version: "v1alpha1",
  kind: "Myapp",
  spec: z.object({
    image: z.string(),
    replicas: z.int().min(0).default(1),
    tier: z.string().optional(),
  }),
});

async function expectDenied(p: Promise<unknown>, pattern: RegExp): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.match(err.message, pattern);
    return err;
  }
  throw new assert.AssertionError({ message: `Expected a denial matching ${pattern}` });
}

function peerFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: "127.0.0.1", port, ca }, () => {
      resolve(sock.getPeerCertificate().fingerprint256);
      sock.end();
    });
    sock.on("error", reject);
  });
}

async function installCrd(client: Client): Promise<void> {
  await client.create(CustomResourceDefinition, Myapp.crd());
  await waitFor(async () => {
    const crd = await client.get(CustomResourceDefinition, "myapps.apps.kubeno.dev");
    return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
  }, { what: "the Myapp CRD to be Established" });
  await waitFor(() => client.list(Myapp, { namespace: "default", limit: 1 }).then(() => true), {
    what: "myapps to be served",
  });
}

Deno.test("admission webhooks against a real API server", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  await installCrd(client);

  const seen: { operation: string; dryRun: boolean; old?: number; now?: number }[] = [];
  const myappWebhook = admission(Myapp, {
    default(app) {
      app.metadata.labels = { ...app.metadata.labels, "apps.kubeno.dev/defaulted": "true" };
      app.spec.tier ??= "standard";
    },
    validate({ operation, object, oldObject, dryRun, warn }) {
      seen.push({ operation, dryRun, old: oldObject?.spec.replicas, now: object?.spec.replicas });
      if (operation === "DELETE") {
        if (oldObject.metadata.labels?.protected) throw new AdmissionDenied("Myapp is protected");
        return;
      }
      if (object.spec.replicas > 100) {
        return {
          allowed: false,
          message: `spec.replicas ${object.spec.replicas} must be at most 100`,
        };
      }
      if (operation === "UPDATE" && object.spec.replicas < oldObject.spec.replicas - 10) {
        return `cannot scale down from ${oldObject.spec.replicas} to ${object.spec.replicas} at once`;
      }
      if (object.spec.replicas > 50) warn("more than 50 replicas is expensive");
    },
    operations: ["CREATE", "UPDATE", "DELETE"],
  });
  await using running = await serveWebhooks(client, [myappWebhook], {
    name: "myapp-operator",
    namespace: "default",
    local: true,
    port: 0,
  });
  // The API server picks configurations up asynchronously: wait until the rule bites.
  await waitFor(async () => {
    try {
      await client.create(Myapp, {
        metadata: { generateName: "probe-", namespace: "default" },
        spec: { image: "x", replicas: 1000 },
      });
      return false;
    } catch (err) {
      return err instanceof ApiError && err.code === 403;
    }
  }, { what: "the webhook configuration to take effect" });

  await t.step("an object violating the rule is denied with the handler's message", async () => {
    const err = await expectDenied(
      client.create(Myapp, {
        metadata: { name: "too-big", namespace: "default" },
        spec: { image: "nginx", replicas: 101 },
      }),
      /admission webhook "vmyapp\.apps\.kubeno\.dev" denied the request: spec\.replicas 101 must be at most 100/,
    );
    assert.equal(err.code, 403);
  });

  await t.step("a defaulted field is set on the stored object", async () => {
    await client.create(Myapp, {
      metadata: { name: "small", namespace: "default" },
      spec: { image: "nginx", replicas: 3 },
    });
    const stored = await client.get(Myapp, "small", { namespace: "default" });
    assert.equal(stored.spec.tier, "standard");
    assert.equal(stored.metadata.labels?.["apps.kubeno.dev/defaulted"], "true");
  });

  await t.step("warnings reach the client in the Warning header", async () => {
    // Through fetch, to see the response's Warning header.
    const api = {
      post: async (path: string, body: unknown) => {
        const res = await cp.request("POST", path, body);
        return { status: res.status, warning: res.headers.get("warning"), body: res.body };
      },
    };
    const res = await api.post("/apis/apps.kubeno.dev/v1alpha1/namespaces/default/myapps", {
      apiVersion: "apps.kubeno.dev/v1alpha1",
      kind: "Myapp",
      metadata: { name: "big" },
      spec: { image: "nginx", replicas: 60 },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.warning ?? "", /299 - "more than 50 replicas is expensive"/);
  });

  await t.step("an update sees the old object", async () => {
    seen.length = 0;
    const big = await client.get(Myapp, "big", { namespace: "default" });
    big.spec.replicas = 20;
    await expectDenied(client.replace(Myapp, big), /cannot scale down from 60 to 20 at once/);
    assert.deepEqual(seen.at(-1), { operation: "UPDATE", dryRun: false, old: 60, now: 20 });
    big.spec.replicas = 55;
    const updated = await client.replace(Myapp, big);
    assert.equal(updated.spec.replicas, 55);
  });

  await t.step("dry runs reach the handlers and store nothing", async () => {
    seen.length = 0;
    const dry = await client.create(Myapp, {
      metadata: { name: "dry", namespace: "default" },
      spec: { image: "nginx", replicas: 2 },
    }, { dryRun: true });
    assert.equal(dry.spec.tier, "standard", "defaulting applies to dry runs too");
    assert.deepEqual(seen, [{ operation: "CREATE", dryRun: true, old: undefined, now: 2 }]);
    await expectDenied(client.get(Myapp, "dry", { namespace: "default" }), /NotFound/);
  });

  await t.step("a deletion is validated against the old object", async () => {
    await client.create(Myapp, {
      metadata: { name: "keep", namespace: "default", labels: { protected: "yes" } },
      spec: { image: "nginx", replicas: 1 },
    });
    await expectDenied(
      client.delete(Myapp, "keep", { namespace: "default" }),
      /Myapp is protected/,
    );
    await client.delete(Myapp, "small", { namespace: "default" });
  });

  await t.step(
    "a webhook that is down: Fail gives a clear error, Ignore lets the write through",
    async () => {
      const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const deadPort = (probe.addr as Deno.NetAddr).port;
      probe.close();
      const mode = (m: string) => ({ matchLabels: { "webhook-test": m } });
      const failing = admission(ConfigMap, {
        validate: () => undefined,
        objectSelector: mode("fail"),
        path: "down-fail",
        name: "fail.down.kubeno.dev",
      });
      const ignoring = admission(ConfigMap, {
        validate: () => undefined,
        objectSelector: mode("ignore"),
        failurePolicy: "Ignore",
        path: "down-ignore",
        name: "ignore.down.kubeno.dev",
      });
      // One configuration: once the Fail entry bites, the Ignore entry is in effect too.
      await registerWebhooks(client, [failing, ignoring], {
        name: "down",
        target: { url: `https://127.0.0.1:${deadPort}` },
        caBundle: running.certificates.current.caBundlePem,
      });
      const cm = (m: string) => ({
        metadata: { generateName: `${m}-`, namespace: "default", labels: { "webhook-test": m } },
      });
      const err = await waitFor(async () => {
        try {
          await client.create(ConfigMap, cm("fail"));
          return undefined;
        } catch (e) {
          return e as ApiError;
        }
      }, { what: "the down webhook to be in effect" });
      assert.equal(err.code, 500);
      assert.match(
        err.message,
        new RegExp(
          `failed calling webhook "vfail\\.down\\.kubeno\\.dev".*https://127\\.0\\.0\\.1:${deadPort}/validate-down-fail.*connection refused`,
        ),
      );
      const ok = await client.create(ConfigMap, cm("ignore"));
      assert.ok(ok.metadata.name?.startsWith("ignore-"));
    },
  );
});

Deno.test("certificates: renewal under load, caBundle follows; supplied directory reload", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });

  await t.step("self-managed certificates renew while every write is admitted", async () => {
    const stamp = admission(ConfigMap, {
      default(cm) {
        cm.metadata.annotations = { ...cm.metadata.annotations, "kubeno.dev/admitted": "yes" };
      },
      objectSelector: { matchLabels: { rotate: "yes" } },
    });
    await using running = await serveWebhooks(client, [stamp], {
      name: "rotate",
      namespace: "default",
      local: true,
      port: 0,
      certificates: { validForMs: 6_000 }, // renews at 4 s, serves the new cert at 5 s
    });
    const firstCert = running.server.certificate.certPem;
    const firstBundle = await readCaBundle(client, "rotate");
    assert.equal(firstBundle, running.certificates.current.caBundlePem);
    const write = () =>
      client.create(ConfigMap, {
        metadata: { generateName: "r-", namespace: "default", labels: { rotate: "yes" } },
      });
    await waitFor(async () => (await write()).metadata.annotations?.["kubeno.dev/admitted"], {
      what: "the rotate webhook to take effect",
    });
    const started = Date.now();
    let writes = 0;
    const bundles = new Set<string>([firstBundle!]);
    let renewedAt = 0;
    // Write continuously through the API server until two renewals have been served. Every
    // write must be admitted, so this is a loop rather than waitFor (which retries failures);
    // its deadline only stops a hung test: renewals come every few seconds.
    const served = new Set<string>([firstCert]);
    const deadline = Date.now() + 120_000;
    while (served.size < 3) {
      if (Date.now() > deadline) {
        throw new Error(
          `Timed out after 120 s waiting for two renewals; ${writes} writes admitted`,
        );
      }
      const cm = await write();
      assert.equal(
        cm.metadata.annotations?.["kubeno.dev/admitted"],
        "yes",
        "admitted by the webhook",
      );
      writes++;
      served.add(running.server.certificate.certPem);
      if (!renewedAt && served.size > 1) renewedAt = Date.now() - started;
      const b = await readCaBundle(client, "rotate");
      if (b) bundles.add(b);
    }
    // Past the first certificate's expiry, still admitted.
    for (let i = 0; i < 5; i++) {
      assert.equal((await write()).metadata.annotations?.["kubeno.dev/admitted"], "yes");
      writes++;
    }
    const finalBundle = (await readCaBundle(client, "rotate"))!;
    const pems = finalBundle.match(/BEGIN CERTIFICATE/g) ?? [];
    assert.equal(pems.length, 2, "the bundle holds the new and the previous CA");
    assert.ok(bundles.size >= 3, `caBundle changed with each renewal (${bundles.size} seen)`);
    assert.ok(
      !finalBundle.includes(firstBundle!.trim()),
      "the first CA is dropped after it expired",
    );
    console.log(
      `rotation: ${writes} writes admitted over ${
        Date.now() - started
      } ms; first switch at ${renewedAt} ms`,
    );
  });

  await t.step("a supplied certificate directory is reloaded when the files change", async () => {
    const dir = await Deno.makeTempDir();
    const ca = await createCa("supplied-ca");
    const leaf = () =>
      issueCert({ commonName: "supplied", ipAddresses: ["127.0.0.1"], server: true }, ca);
    const writeDir = async (c: { certPem: string; keyPem: string }) => {
      // Replace atomically, as the kubelet does.
      await Deno.writeTextFile(`${dir}/tls.key.tmp`, c.keyPem);
      await Deno.writeTextFile(`${dir}/tls.crt.tmp`, c.certPem);
      await Deno.rename(`${dir}/tls.key.tmp`, `${dir}/tls.key`);
      await Deno.rename(`${dir}/tls.crt.tmp`, `${dir}/tls.crt`);
    };
    await Deno.writeTextFile(`${dir}/ca.crt`, ca.certPem);
    await writeDir(await leaf());
    const checked = admission(ConfigMap, {
      default(cm) {
        cm.metadata.annotations = { ...cm.metadata.annotations, "kubeno.dev/supplied": "yes" };
      },
      objectSelector: { matchLabels: { supplied: "yes" } },
    });
    await using running = await serveWebhooks(client, [checked], {
      name: "supplied",
      namespace: "default",
      local: true,
      port: 0,
      certDir: dir,
    });
    const write = async () =>
      (await client.create(ConfigMap, {
        metadata: { generateName: "s-", namespace: "default", labels: { supplied: "yes" } },
      })).metadata.annotations?.["kubeno.dev/supplied"];
    await waitFor(write, { what: "the supplied webhook to take effect" });
    const before = await peerFingerprint(running.server.port, ca.certPem);
    const next = await leaf();
    await writeDir(next);
    const expected = new (await import("node:crypto")).X509Certificate(next.certPem).fingerprint256;
    await waitFor(
      async () => (await peerFingerprint(running.server.port, ca.certPem)) === expected,
      { what: "the server to present the new certificate" },
    );
    assert.notEqual(before, expected);
    assert.equal(await write(), "yes", "still admitted with the new certificate");
    await Deno.remove(dir, { recursive: true });
  });
});
