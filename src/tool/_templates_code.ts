// Templates of the TypeScript a scaffolded project starts with: the operator entry point
// (with the registration markers `kubeno create resource` edits), its test against a real
// control plane, the dev script, and a resource + controller skeleton. The commands run
// `deno fmt` over what they write, so long names wrap as the user's formatter wants.
import { pluralize } from "../core/resource.ts";

/** The names a project or resource is generated from. */
export interface ResourceNames {
  /** API group, e.g. `apps.example.com`. */
  group: string;
  /** API version, e.g. `v1alpha1`. */
  version: string;
  /** Kind, e.g. `Myapp`. */
  kind: string;
}

/** The names a project is generated from. */
export interface ProjectNames extends ResourceNames {
  /** The operator's name, a DNS label, e.g. `myapp-operator`. */
  name: string;
}

/** Marker after the last import in the entry point; `create resource` inserts above it. */
export const RESOURCES_MARKER = "// kubeno:resources";
/** Marker at the end of the `controllers` array; `create resource` inserts above it. */
export const CONTROLLERS_MARKER = "// kubeno:controllers";

/**
 * The identifier of a kind's controller, e.g. `myappController`.
 *
 * @param kind The kind.
 * @returns The identifier.
 */
export function controllerId(kind: string): string {
  return `${kind[0].toLowerCase()}${kind.slice(1)}Controller`;
}

const RESERVED = new Set(
  ("break case catch class const continue debugger default delete do else enum export " +
    "extends false finally for function if implements import in instanceof interface let " +
    "new null package private protected public return static super switch this throw true " +
    "try typeof var void while with yield await arguments eval")
    .split(" "),
);

/**
 * The name of the reconciled object in a controller: the kind in lowerCamelCase, unless
 * that is a reserved word or one of the template's own locals.
 */
function paramName(kind: string): string {
  const v = kind[0].toLowerCase() + kind.slice(1);
  return RESERVED.has(v) || ["ctx", "labels", "applied", "ready"].includes(v) ? `${v}Obj` : v;
}

/** The lower-case kind, used for file names and sample objects. */
export function fileStem(kind: string): string {
  return kind.toLowerCase();
}

/**
 * The name a built-in kind is imported under: itself, unless the user's kind has the same
 * name (a custom `Deployment` in another group is legal).
 */
function builtin(name: string, kind: string): { id: string; spec: string } {
  return name === kind
    ? { id: `K8s${name}`, spec: `${name} as K8s${name}` }
    : { id: name, spec: name };
}

/**
 * `operator.ts`: one custom resource whose controller owns a Deployment and reports a phase,
 * and the operator program with the registration markers.
 *
 * @param p The project's names.
 * @returns The file's text.
 */
export function operatorTs(p: ProjectNames): string {
  const dep = builtin("Deployment", p.kind);
  const imports = ["defineResource", dep.spec, "operator", "reconcile", "z"]
    .sort((a, b) => a.localeCompare(b, "en", { sensitivity: "base" }));
  const v = paramName(p.kind);
  return `/**
 * ${p.name}: reconciles ${p.kind} objects (${p.group}/${p.version}) into Deployments.
 *
 * Run it: \`deno task dev\` (a local control plane), or against your cluster with
 * \`deno run -A operator.ts install\` then \`deno run -A operator.ts run\`.
 *
 * @module
 */
import {
${imports.map((i) => `  ${i},`).join("\n")}
} from "@kubeno/kubeno";
${RESOURCES_MARKER} (\`kubeno create resource\` adds imports above this line)

/** A ${p.kind} runs \`replicas\` pods of \`image\`. */
export const ${p.kind} = defineResource({
  group: "${p.group}",
  version: "${p.version}",
  kind: "${p.kind}",
  spec: z.object({
    image: z.string().describe("Container image to run"),
    replicas: z.int().min(0).default(1).describe("Desired pods"),
  }),
  status: z.object({
    phase: z.enum(["Pending", "Running"]).optional()
      .describe("Running once every pod is ready"),
  }),
  printerColumns: [
    { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
  ],
});

/**
 * Keeps one Deployment per ${p.kind}. Level-based: it states the Deployment as it should
 * be, whatever changed. The Deployment is owned, so its changes (pods becoming ready)
 * reconcile the ${p.kind} again, and deleting the ${p.kind} deletes it.
 */
export const ${controllerId(p.kind)} = reconcile(${p.kind}, {
  owns: [${dep.id}],
  async reconcile(${v}, ctx) {
    const labels = { "app.kubernetes.io/instance": ctx.ref.name };
    const applied = await ctx.apply(${dep.id}, {
      metadata: { name: ctx.ref.name, labels },
      spec: {
        replicas: ${v}.spec.replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: "app", image: ${v}.spec.image }] },
        },
      },
    });
    const ready = (applied.status?.readyReplicas ?? 0) === ${v}.spec.replicas;
    await ctx.patchStatus(${v}, { phase: ready ? "Running" : "Pending" });
  },
});

/** The program: \`run\` (default), \`install\`, \`uninstall\`, \`manifests\`, \`version\`. */
export const program = operator({
  name: "${p.name}",
  version: "0.1.0",
  controllers: [
    ${controllerId(p.kind)},
    ${CONTROLLERS_MARKER} (\`kubeno create resource\` adds controllers above this line)
  ],
});

if (import.meta.main) await program.main();
`;
}

/**
 * `operator_test.ts`: installs the CRDs, runs the operator as a separate process against a
 * real control plane, creates an object and waits (with a deadline) for the Deployment and
 * the `Running` phase.
 *
 * @param p The project's names.
 * @returns The file's text.
 */
export function operatorTestTs(p: ProjectNames): string {
  const dep = builtin("Deployment", p.kind);
  return `// The operator as it runs in production, against a real control plane on loopback:
// etcd and kube-apiserver, plus kube-controller-manager, kube-scheduler and fake nodes
// (kwok), so that Deployments get ready pods. Waits have deadlines; nothing sleeps.
import assert from "node:assert/strict";
import { createClient, ${dep.spec} } from "@kubeno/kubeno";
import { startControlPlane } from "@kubeno/kubeno/testing";
import { ${p.kind} } from "./operator.ts";

const entry = new URL("./operator.ts", import.meta.url).pathname;

Deno.test("a ${p.kind} gets a Deployment and turns Running", async () => {
  await using cp = await startControlPlane({ workloads: true });
  const kubeconfig = ["--kubeconfig", cp.kubeconfigPath];
  const install = await operatorCommand(["install", ...kubeconfig]).output();
  assert.equal(install.code, 0, new TextDecoder().decode(install.stderr));

  await using op = startOperator(["run", ...kubeconfig, ...NO_SERVERS]);
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  try {
    await client.create(${p.kind}, {
      metadata: { name: "sample", namespace: "default" },
      spec: { image: "nginx:1.27", replicas: 2 },
    });
    const get = { namespace: "default" };
    const deployment = await eventually(
      "the Deployment",
      () => client.get(${dep.id}, "sample", get),
    );
    assert.equal(deployment.spec?.replicas, 2);
    await eventually("phase Running", async () => {
      const obj = await client.get(${p.kind}, "sample", get);
      return obj.status?.phase === "Running";
    });
  } catch (err) {
    console.error(\`operator log:\\n\${await op.stop()}\`);
    throw err;
  }
});

/** Metrics and probes off, so tests never compete for ports. */
const NO_SERVERS = [
  "--metrics-bind-address=0",
  "--health-probe-bind-address=0",
];

function operatorCommand(args: string[]): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", entry, ...args],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  });
}

/** Starts the operator; \`stop()\` sends SIGTERM and returns its log. */
function startOperator(args: string[]) {
  const child = operatorCommand(args).spawn();
  const log = new Response(child.stderr).text();
  let stopped: Promise<string> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* already exited */ }
      await child.status;
      return await log;
    })();
  return {
    stop,
    async [Symbol.asyncDispose]() {
      await stop();
    },
  };
}

/** Calls \`check\` until it returns a truthy value (a throw means "not yet"). */
async function eventually<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const why = last instanceof Error ? \`: \${last.message}\` : "";
  assert.fail(\`Timed out waiting for \${what}\${why}\`);
}
`;
}

/**
 * `dev.ts`: a local control plane with workloads, the CRDs installed, the sample applied,
 * and the operator running in-process until Ctrl-C.
 *
 * @param p The project's names.
 * @returns The file's text.
 */
export function devTs(p: ProjectNames): string {
  const sample = `samples/${fileStem(p.kind)}.yaml`;
  return `// \`deno task dev\`: a Kubernetes control plane on loopback (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and fake nodes), the operator's CRDs installed,
// ${sample} applied, and the operator running against it until Ctrl-C. Arguments go to
// \`run\`, e.g. \`deno task dev --log-level debug\`.
import { startControlPlane } from "@kubeno/kubeno/testing";
import { program } from "./operator.ts";

await using cp = await startControlPlane({ workloads: true });
const kubeconfig = ["--kubeconfig", cp.kubeconfigPath];
console.error(\`Kubernetes \${cp.version} at \${cp.server}. In another shell:
  export KUBECONFIG=\${cp.kubeconfigPath}
  \${cp.binary("kubectl")} get ${pluralize(p.kind)},deployments\`);

if (await program.main(["install", ...kubeconfig]) === 0) {
  const sample = new URL("./${sample}", import.meta.url).pathname;
  const applied = await cp.kubectl("apply", "-f", sample);
  console.error((applied.stdout || applied.stderr).trim());
  await program.main(["run", ...kubeconfig, ...Deno.args]);
}
`;
}

/**
 * A sample object of the kind, for `kubectl apply -f`.
 *
 * @param r The resource's names.
 * @param spec The spec's YAML lines, indented by two.
 * @returns The file's text.
 */
export function sampleYaml(r: ResourceNames, spec: string): string {
  return `apiVersion: ${r.group}/${r.version}
kind: ${r.kind}
metadata:
  name: ${fileStem(r.kind)}-sample
spec:
${spec}`;
}

/**
 * `resources/<kind>.ts` from `create resource`: a resource whose controller owns a
 * ConfigMap and reports a phase.
 *
 * @param r The resource's names.
 * @returns The file's text.
 */
export function resourceTs(r: ResourceNames): string {
  const cm = builtin("ConfigMap", r.kind);
  const imports = [cm.spec, "defineResource", "reconcile", "z"]
    .sort((a, b) => a.localeCompare(b, "en", { sensitivity: "base" }));
  const v = paramName(r.kind);
  return `/**
 * The ${r.kind} resource (${r.group}/${r.version}) and its controller.
 *
 * @module
 */
import { ${imports.join(", ")} } from "@kubeno/kubeno";

/** A ${r.kind}. Describe each field: the descriptions go into the CRD. */
export const ${r.kind} = defineResource({
  group: "${r.group}",
  version: "${r.version}",
  kind: "${r.kind}",
  spec: z.object({
    message: z.string().default("hello")
      .describe("Text stored in the ConfigMap"),
  }),
  status: z.object({
    phase: z.enum(["Pending", "Ready"]).optional()
      .describe("Ready once written"),
  }),
  printerColumns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
  ],
});

/** Keeps one ConfigMap per ${r.kind} holding its message. */
export const ${controllerId(r.kind)} = reconcile(${r.kind}, {
  owns: [${cm.id}],
  async reconcile(${v}, ctx) {
    await ctx.apply(${cm.id}, {
      metadata: { name: \`\${ctx.ref.name}-${fileStem(r.kind)}\` },
      data: { message: ${v}.spec.message },
    });
    await ctx.patchStatus(${v}, { phase: "Ready" });
  },
});
`;
}
