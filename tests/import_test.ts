// `kubeno import` on three real CRDs with different features (tests/fixtures/crds, from the
// projects' Go modules, with their licences): cert-manager's Certificate (enums, atomic lists,
// printer columns), Gateway API's HTTPRoute (two served versions, CEL rules, list maps,
// patterns, defaults) and Prometheus Operator's ServiceMonitor (int-or-string, patterns). Each
// generated module type-checks, the CRD built from it keeps the original's structural
// features, and on a real API server with the original CRD installed an object valid for the
// CRD is accepted by the zod schema and the API server while an invalid one is refused by both.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient } from "../src/client/client.ts";
import { ApiError } from "../src/client/errors/api_error.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import type { JSONSchemaProps } from "../src/core/crd.ts";
import type { KubeObject } from "../src/core/object.ts";
import type { Resource } from "../src/core/resource.ts";
import { fromYaml } from "../src/util/yaml.ts";
import { main } from "../src/tool/main.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { waitFor } from "./_helpers.ts";

const ROOT = new URL("../", import.meta.url);
const SCHEMA = new URL("schema.ts", ROOT).href;
const fixture = (p: string) => new URL(`tests/fixtures/crds/${p}`, ROOT).pathname;

interface Case {
  file: string;
  /** Export name of the resource to write with, and its objects. */
  resource: string;
  valid: Record<string, unknown>;
  /** Invalid for the CRD's schema: refused by zod and by the API server. */
  invalid: Record<string, unknown>;
}

const CASES: Case[] = [
  {
    file: "cert-manager/cert-manager.io_certificates.yaml",
    resource: "Certificate",
    valid: {
      secretName: "web-tls",
      issuerRef: { name: "ca", kind: "Issuer" },
      dnsNames: ["web.example.com"],
      privateKey: { algorithm: "ECDSA", size: 256 },
    },
    invalid: {
      secretName: "web-tls",
      issuerRef: { name: "ca" },
      privateKey: { algorithm: "DSA" }, // not in the enum
    },
  },
  {
    file: "gateway-api/gateway.networking.k8s.io_httproutes.yaml",
    resource: "HTTPRouteV1",
    valid: {
      parentRefs: [{ name: "gw" }],
      hostnames: ["app.example.com"],
      rules: [{
        matches: [{ path: { type: "PathPrefix", value: "/api" } }],
        backendRefs: [{ name: "api", port: 8080 }],
      }],
    },
    invalid: {
      parentRefs: [{ name: "gw" }],
      rules: [{ backendRefs: [{ name: "api", port: 70000 }] }], // maximum 65535
    },
  },
  {
    file: "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml",
    resource: "ServiceMonitor",
    valid: {
      selector: { matchLabels: { app: "web" } },
      endpoints: [{ port: "web", interval: "30s" }, { targetPort: 8080, path: "/metrics" }],
    },
    invalid: {
      selector: { matchLabels: { app: "web" } },
      endpoints: [{ port: "web", interval: "thirty seconds" }], // the duration pattern
    },
  },
];

/** The structural features of a schema, one string per node and feature, for comparison. */
function features(s: JSONSchemaProps | undefined, path = "", out = new Set<string>()): Set<string> {
  if (!s) return out;
  const add = (k: string, v: unknown) =>
    v !== undefined && out.add(`${path} ${k}=${JSON.stringify(v)}`);
  add("type", s.type);
  add("enum", s.enum);
  add("required", s.required && [...s.required].sort());
  add("nullable", s.nullable);
  add("default", s.default);
  // A RegExp's source escapes "/", the same character in RE2.
  add("pattern", s.pattern?.replaceAll("\\/", "/"));
  for (
    const k of ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"] as const
  ) {
    add(k, s[k]);
  }
  for (
    const k of [
      "x-kubernetes-int-or-string",
      "x-kubernetes-preserve-unknown-fields",
      "x-kubernetes-list-type",
      "x-kubernetes-list-map-keys",
      "x-kubernetes-map-type",
      "x-kubernetes-embedded-resource",
    ] as const
  ) add(k, s[k]);
  for (const r of s["x-kubernetes-validations"] ?? []) add("rule", r.rule);
  for (const [k, p] of Object.entries(s.properties ?? {})) features(p, `${path}.${k}`, out);
  if (s.items) features(s.items as JSONSchemaProps, `${path}[*]`, out);
  if (s.additionalProperties && typeof s.additionalProperties === "object") {
    features(s.additionalProperties as JSONSchemaProps, `${path}.*`, out);
  }
  return out;
}

Deno.test("kubeno import: three real CRDs → modules that type-check and validate like the API server", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const dir = await Deno.makeTempDir({ prefix: "kubeno-import-" });

  for (const c of CASES) {
    await t.step(c.file, async () => {
      const out = `${dir}/${c.resource}.ts`;
      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
      const code = await main(
        ["import", fixture(c.file), "--out", out, "--schema-import", SCHEMA],
        io,
      );
      assert.equal(code, 0, lines.join("\n"));

      // The module type-checks as written.
      const check = await new Deno.Command(Deno.execPath(), {
        args: ["check", "--config", new URL("deno.json", ROOT).pathname, out],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(check.success, new TextDecoder().decode(check.stderr));

      // Every served version has a resource whose CRD keeps the original's features.
      const original = fromYaml(
        await Deno.readTextFile(fixture(c.file)),
      )[0] as CustomResourceDefinition;
      const mod = await import(new URL(`file://${out}`).href) as Record<string, unknown>;
      const served = original.spec.versions.filter((v) => v.served);
      for (const v of served) {
        const id = served.length === 1
          ? original.spec.names.kind
          : `${original.spec.names.kind}${v.name[0].toUpperCase()}${v.name.slice(1)}`;
        const res = mod[id] as Resource<KubeObject> & { crd(): CustomResourceDefinition };
        assert.ok(res, `no export ${id}`);
        const built = res.crd();
        assert.equal(built.spec.scope, original.spec.scope);
        assert.deepEqual(built.spec.names.shortNames ?? [], original.spec.names.shortNames ?? []);
        const bv = built.spec.versions[0];
        assert.deepEqual(bv.additionalPrinterColumns ?? [], v.additionalPrinterColumns ?? []);
        const want = features(v.schema?.openAPIV3Schema?.properties?.spec);
        const got = features(bv.schema?.openAPIV3Schema?.properties?.spec);
        // defineResource defaults a spec without required fields to {} (kubeno's own rule).
        got.delete(" default={}");
        const missing = [...want].filter((f) => !got.has(f));
        const extra = [...got].filter((f) => !want.has(f));
        assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, `${id} spec`);
      }

      // Installed as published, the API server and zod agree.
      await client.create(CustomResourceDefinition, original);
      await waitFor(async () => {
        const crd = await client.get(CustomResourceDefinition, original.metadata.name!);
        return crd.status?.conditions?.some((x) => x.type === "Established" && x.status === "True");
      }, { what: `${original.metadata.name} established` });
      const res = mod[c.resource] as Resource<KubeObject> & {
        safeParse(o: unknown): { success: boolean; error?: { issues: unknown[] } };
        group: string;
        version: string;
        kind: string;
      };
      const object = (name: string, spec: unknown) => ({
        apiVersion: `${res.group}/${res.version}`,
        kind: res.kind,
        metadata: { name, namespace: "default" },
        spec,
      });
      const valid = object("valid", c.valid);
      const parsed = res.safeParse(valid);
      assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
      await waitFor(async () => {
        try {
          return Boolean(await client.create(res, valid));
        } catch (e) {
          if (e instanceof ApiError && e.code === 404) return false; // discovery catching up
          throw e;
        }
      }, { what: `${c.resource} created` });
      const invalid = object("invalid", c.invalid);
      assert.equal(res.safeParse(invalid).success, false, "zod accepted the invalid object");
      const refused = await client.create(res, invalid).catch((e) => e);
      assert.ok(refused instanceof ApiError && refused.code === 422, String(refused));
    });
  }

  await t.step("the same module from the cluster's CRD and from a URL", async () => {
    const file = fixture(CASES[0].file);
    const gen = async (source: string, ...flags: string[]) => {
      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
      const code = await main(["import", source, "--schema-import", SCHEMA, ...flags], io);
      assert.equal(code, 0, lines.join("\n"));
      return lines.join("\n").split("\n").slice(1).join("\n"); // without the header naming the source
    };
    const fromFile = await gen(file);
    const fromCluster = await gen(
      "certificates.cert-manager.io",
      "--kubeconfig",
      cp.kubeconfigPath,
    );
    assert.equal(fromCluster, fromFile);
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async () => new Response(await Deno.readTextFile(file)),
    );
    try {
      assert.equal(await gen(`http://127.0.0.1:${server.addr.port}/certificates.yaml`), fromFile);
    } finally {
      await server.shutdown();
    }
  });

  await t.step("a test operator applies the imported Certificate, typed", async () => {
    const operatorFile = `${dir}/cert_operator.ts`;
    const src = (spec: string) =>
      `import { Certificate } from "./Certificate.ts";
import { ConfigMap } from "${new URL("src/core/kinds.ts", ROOT).href}";
import { reconcile } from "${new URL("src/runtime/controller/reconcile.ts", ROOT).href}";

/** For each ConfigMap with a \`host\`, a Certificate for that host. */
export const certController = reconcile(ConfigMap, {
  owns: [Certificate],
  async reconcile(cm, ctx) {
    const host = cm.data?.host;
    if (!host) return;
    await ctx.apply(Certificate, {
      metadata: { name: cm.metadata.name! },
      spec: ${spec},
    });
  },
});
`;
    let checkErrors = "";
    const checks = async (path: string) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["check", "--config", new URL("deno.json", ROOT).pathname, path],
        stdout: "null",
        stderr: "piped",
      }).output();
      checkErrors = new TextDecoder().decode(out.stderr);
      return out.success;
    };
    // A spec that breaks the imported type does not compile.
    await Deno.writeTextFile(operatorFile, src(`{ secretName: 42, issuerRef: { name: "ca" } }`));
    assert.equal(await checks(operatorFile), false, "a number for secretName type-checked");
    assert.match(checkErrors, /secretName/);
    await Deno.writeTextFile(
      operatorFile,
      src(
        '{ secretName: `${cm.metadata.name}-tls`, issuerRef: { name: "ca", kind: "Issuer" }, dnsNames: [host] }',
      ),
    );
    assert.ok(await checks(operatorFile), checkErrors);
    const { certController } = await import(new URL(`file://${operatorFile}`).href);
    const stop = new AbortController();
    const manager = createManager({
      client,
      namespaces: ["default"],
      controllers: [certController],
    });
    const done = manager.start(stop.signal);
    try {
      const { ConfigMap } = await import("../src/core/kinds.ts");
      await client.create(ConfigMap, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "shop", namespace: "default" },
        data: { host: "shop.example.com" },
      });
      const mod = await import(new URL(`file://${dir}/Certificate.ts`).href);
      const cert = await waitFor(
        () => client.get(mod.Certificate, "shop", { namespace: "default" }).catch(() => undefined),
        { what: "the operator's Certificate" },
      ) as {
        spec: { secretName: string; dnsNames: string[] };
        metadata: { ownerReferences?: { kind: string }[] };
      };
      assert.equal(cert.spec.secretName, "shop-tls");
      assert.deepEqual(cert.spec.dnsNames, ["shop.example.com"]);
      assert.equal(cert.metadata.ownerReferences?.[0]?.kind, "ConfigMap");
    } finally {
      stop.abort();
      await done;
    }
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("kubeno import: bad sources are one-line usage errors", async () => {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  const notCrd = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(notCrd, "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n");
  assert.equal(await main(["import", notCrd], io), 2);
  assert.match(lines.at(-1)!, /Cannot import ".*": it is not a CustomResourceDefinition/);
  assert.equal(await main(["import", "no-such-file.yaml"], io), 2);
  assert.match(lines.at(-1)!, /no such file; pass a CRD file, a URL, or a CRD name/);
  assert.equal(await main(["import"], io), 2);
  assert.match(lines.at(-1)!, /needs a CRD file, URL or CRD name/);
  await Deno.remove(notCrd);
});
