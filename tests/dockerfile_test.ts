// The Dockerfile compiles the operator with exactly the permissions `kubeno compile` grants
// an operator running in a cluster, and the generated Deployment runs it the way the image
// expects (non-root, read-only root filesystem with /tmp writable, the probes it serves).
import assert from "node:assert/strict";
import { operatorPermissions } from "../src/tool/compile.ts";
import { MALLOC_ENV } from "../src/util/memory_limit.ts";
import { fromYaml } from "../src/util/yaml.ts";

Deno.test("Dockerfile: deno compile uses exactly the in-cluster operator permissions", async () => {
  const text = await Deno.readTextFile(new URL("../Dockerfile", import.meta.url));
  const compile = text.replace(/\\\n\s*/g, " ").match(/deno compile ([^\n]*)--output/);
  assert.ok(compile, "the Dockerfile runs deno compile");
  const flags = compile[1].trim().split(/\s+/);
  assert.deepEqual(flags.sort(), operatorPermissions().sort());
  assert.match(text, /^USER 65532:65532$/m);
  assert.match(text, /distroless\/cc-debian12:nonroot/);
  // The image carries the native-memory setting wherever it runs, not only in the Deployment.
  assert.ok(text.includes(`\nENV ${MALLOC_ENV.name}=${MALLOC_ENV.value}\n`), "ENV MALLOC_ENV");
});

Deno.test("Dockerfile: the generated Deployment matches the image", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      new URL("../examples/myapp.ts", import.meta.url).pathname,
      "manifests",
      "--image=example.com/myapp-operator:0.1.0",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  // deno-lint-ignore no-explicit-any
  const docs = fromYaml(new TextDecoder().decode(out.stdout)) as any[];
  const dep = docs.find((o) => o.kind === "Deployment");
  const pod = dep.spec.template.spec;
  const c = pod.containers[0];
  assert.equal(c.image, "example.com/myapp-operator:0.1.0");
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.runAsNonRoot, true);
  assert.deepEqual(c.volumeMounts, [{ name: "tmp", mountPath: "/tmp" }]);
  assert.ok(
    pod.volumes.some((v: { name: string; emptyDir?: unknown }) => v.name === "tmp" && v.emptyDir),
  );
  assert.equal(c.livenessProbe.httpGet.path, "/healthz");
  assert.equal(c.readinessProbe.httpGet.path, "/readyz");
  assert.ok(c.args.includes("--leader-elect"));
});
