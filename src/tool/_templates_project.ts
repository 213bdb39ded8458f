// Templates of a scaffolded project's non-code files: deno.json (import map and tasks),
// Dockerfile, README.md and .gitignore. The compile permissions come from
// `operatorPermissions()`, the same list `kubeno compile` uses.
import { fileStem, type ProjectNames } from "./_templates_code.ts";
import { pluralize } from "../core/resource.ts";
import { MALLOC_ENV } from "../util/memory_limit.ts";

/**
 * `deno.json`: the import map (kubeno from JSR or a checkout) and the tasks.
 *
 * @param p The project's names.
 * @param imports The import map entries for kubeno, from `kubenoImports()`.
 * @returns The file's text.
 */
export function denoJson(p: ProjectNames, imports: Record<string, string>): string {
  const task = (command: string, description: string) => ({ command, description });
  return JSON.stringify(
    {
      name: p.name,
      version: "0.1.0",
      exports: "./operator.ts",
      imports,
      // An application, not a library: its exports need no explicit types.
      lint: { rules: { exclude: ["no-slow-types"] } },
      // The generated Helm chart holds Go templates, not YAML deno fmt could read.
      fmt: { exclude: ["chart/"] },
      tasks: {
        dev: task(
          "deno run -A dev.ts",
          "Start a local control plane, install the CRDs and run the operator",
        ),
        test: task("deno test -A", "Run the tests against a real control plane"),
        check: task("deno check . && deno lint && deno fmt --check", "Type-check and lint"),
        compile: task(
          `deno run -A @kubeno/kubeno/cli compile operator.ts -o bin/${p.name}`,
          "Compile the operator into one binary with only the permissions it needs",
        ),
        manifests: task(
          "deno run -A operator.ts manifests",
          "Print the YAML that deploys the operator (CRDs, RBAC, Deployment)",
        ),
        chart: task(
          "deno run -A operator.ts manifests --helm chart",
          "Write a Helm chart of the operator into chart/ (same objects as manifests)",
        ),
      },
    },
    null,
    2,
  ) + "\n";
}

/**
 * `Dockerfile`: compiles the operator in a Deno image, runs it as non-root on distroless.
 *
 * @param p The project's names.
 * @param permissions The `deno compile` permission flags for running in a cluster.
 * @param denoVersion The Deno version to build with.
 * @returns The file's text.
 */
export function dockerfile(p: ProjectNames, permissions: string[], denoVersion: string): string {
  return `# Compiles ${p.name} into one self-contained binary that carries its CRDs and RBAC, and
# runs it as a non-root user on a minimal base:  docker build -t ${p.name}:0.1.0 .
#
# The binary gets only the permissions an operator needs (from \`kubeno compile\`): network,
# reading the service-account token, its temp dir (for the webhook server's socket), the
# environment, the hostname (the leader-election identity) and the memory limit (cgroup). No
# --v8-flags: compiled-in flags win over DENO_V8_FLAGS, through which the generated Deployment
# sizes the V8 heap to its memory limit.
ARG DENO_VERSION=${denoVersion}

FROM denoland/deno:\${DENO_VERSION} AS build
WORKDIR /src
COPY . .
RUN deno install --entrypoint operator.ts \\
 && deno compile \\
      ${permissions.join(" \\\n      ")} \\
      --output /out/operator operator.ts

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/operator /operator
# glibc returns freed native buffers of 1 MiB and more to the system (kubeno's MALLOC_ENV).
ENV ${MALLOC_ENV.name}=${MALLOC_ENV.value}
USER 65532:65532
EXPOSE 8443 8081 9443
ENTRYPOINT ["/operator"]
CMD ["run"]
`;
}

/**
 * `README.md`: what the project is and how to develop, test and deploy it.
 *
 * @param p The project's names.
 * @param kubenoSource Where kubeno comes from, e.g. `jsr:@kubeno/kubeno@^0.1.0`.
 * @returns The file's text.
 */
export function readme(p: ProjectNames, kubenoSource: string): string {
  const plural = pluralize(p.kind);
  return `# ${p.name}

A Kubernetes operator written with [kubeno](https://jsr.io/@kubeno/kubeno) (\`${kubenoSource}\`).
It reconciles \`${p.kind}\` objects (\`${p.group}/${p.version}\`) into Deployments and reports
their phase.

| file | what it is |
| --- | --- |
| \`operator.ts\` | the \`${p.kind}\` resource, its controller and the operator program |
| \`operator_test.ts\` | a test against a real control plane on loopback |
| \`dev.ts\` | \`deno task dev\`: a local control plane with the operator running |
| \`samples/${fileStem(p.kind)}.yaml\` | an example \`${p.kind}\` |
| \`resources/\` | resources added with \`kubeno create resource\` |
| \`Dockerfile\` | a non-root image holding the compiled operator |

## Develop

\`\`\`sh
deno task dev     # control plane + CRDs + operator; prints the KUBECONFIG to use
deno task test    # the tests, against a real etcd and kube-apiserver
deno task check   # type-check, lint, format
\`\`\`

The first run builds the Kubernetes binaries (etcd, kube-apiserver, ...) with Go into a
cache; to use binaries you have, set \`KUBEBUILDER_ASSETS\` or \`TEST_ASSET_<NAME>\` as with
controller-runtime's envtest.

Add a resource with its controller (registered in \`operator.ts\` at the
\`// kubeno:controllers\` marker):

\`\`\`sh
deno run -A @kubeno/kubeno/cli create resource --group ${p.group} --version ${p.version} --kind Backup
\`\`\`

## Run against a cluster

\`\`\`sh
deno run -A operator.ts install     # apply the CRDs
deno run -A operator.ts run         # reconcile until Ctrl-C
kubectl apply -f samples/${fileStem(p.kind)}.yaml
kubectl get ${plural}.${p.group}   # the full name: a kind such as CronJob is also built in
\`\`\`

## Deploy

\`\`\`sh
deno task compile                   # bin/${p.name}, with only the permissions it needs
docker build -t ${p.name}:0.1.0 .
deno task manifests > deploy.yaml   # CRDs, ServiceAccount, RBAC, Deployment
kubectl apply -f deploy.yaml
\`\`\`

Or with Helm: \`deno task chart\` writes \`chart/\`, whose default values render the same objects
(the CRDs under \`chart/crds/\`, which \`helm uninstall\` leaves in place, as Helm does):

\`\`\`sh
deno task chart
helm install ${p.name} ./chart --namespace ${p.name}-system --create-namespace
helm upgrade ${p.name} ./chart --namespace ${p.name}-system --set-string image.tag=0.1.1
\`\`\`
`;
}

/** `.gitignore`: build output. */
export const GITIGNORE = "bin/\ndeploy.yaml\nchart/\n";
