// Built-in types inside a CRD, on a real control plane: examples/cronjob.ts's CronJob embeds the
// full batch/v1 JobTemplateSpec schema (builtinSchema, generated with the kinds by
// `deno task gen:kinds`; tests/kinds_generated_test.ts checks it fresh).
//
// Shows: `kubectl apply --dry-run=server` refuses a `templte:` typo inside jobTemplate.spec (and a
// container without a name, and two containers with one name: the list-map key), accepts a valid
// template with int-or-string and Quantity values; a four-field schedule is refused as kubebuilder's
// parser refuses it; the CRD's size with and without descriptions.
import assert from "node:assert/strict";
import { z } from "zod";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import { defineResource } from "../src/schema/define_resource.ts";
import { builtinSchema } from "../src/schema/builtin.ts";
import { toStructuralSchema } from "../src/schema/schema.ts";
import type { JSONSchemaProps } from "../src/core/crd.ts";
import { CronJob, nextSchedules } from "../examples/cronjob.ts";
import { waitFor } from "./_helpers.ts";

const valid = () => ({
  apiVersion: "batch.kubeno.dev/v1",
  kind: "CronJob",
  metadata: { name: "nightly", namespace: "default" },
  spec: {
    schedule: "0 3 * * *",
    jobTemplate: {
      metadata: { labels: { app: "nightly" } },
      spec: {
        backoffLimit: 2,
        template: {
          metadata: { labels: { app: "nightly" } },
          spec: {
            restartPolicy: "OnFailure",
            containers: [{
              name: "run",
              image: "busybox",
              command: ["sh", "-c", "date"],
              ports: [{ containerPort: 8080 }],
              resources: { limits: { cpu: "500m", memory: "64Mi" }, requests: { cpu: 1 } },
              livenessProbe: { httpGet: { path: "/", port: "http" } },
            }],
          },
        },
      },
    },
  },
});

Deno.test("the embedded schemas are structural and say what the API says", () => {
  const s = toStructuralSchema(builtinSchema("PodTemplateSpec"));
  const containers = s.properties!.spec.properties!.containers;
  assert.equal(containers["x-kubernetes-list-type"], "map");
  assert.deepEqual(containers["x-kubernetes-list-map-keys"], ["name"]);
  assert.deepEqual(containers.items!.required, ["name"]);
  const container = containers.items!.properties!;
  assert.deepEqual(container.ports["x-kubernetes-list-map-keys"], ["containerPort", "protocol"]);
  assert.equal(container.ports.items!.properties!.protocol.default, "TCP");
  assert.equal(
    (container.resources.properties!.limits.additionalProperties as JSONSchemaProps)[
      "x-kubernetes-int-or-string"
    ],
    true,
  );
  assert.equal(
    container.livenessProbe.properties!.httpGet.properties!.port["x-kubernetes-int-or-string"],
    true,
  );
  assert.match(container.image.description!, /Container image name/);
  // PodTemplateSpec.metadata holds what an embedded object's metadata may hold.
  assert.deepEqual(Object.keys(s.properties!.metadata.properties!).sort(), [
    "annotations",
    "finalizers",
    "generateName",
    "labels",
    "name",
    "namespace",
  ]);
  const bare = toStructuralSchema(builtinSchema("PodTemplateSpec", { descriptions: false }));
  assert.ok(!JSON.stringify(bare).includes('"description"'));
  assert.throws(() => builtinSchema("NoSuchType" as never), /not a built-in Kubernetes type/);
  // The output type is the generated one.
  const r: z.output<ReturnType<typeof builtinSchema<"ResourceRequirements">>> = {
    limits: { cpu: "1" },
  };
  assert.ok(builtinSchema("ResourceRequirements").safeParse(r).success);
});

Deno.test("a schedule of four fields is refused; five, six and descriptors are not", () => {
  const parse = (schedule: string) =>
    CronJob.safeParse({ ...valid(), spec: { ...valid().spec, schedule } });
  for (const ok of ["0 3 * * *", "*/2 * * * * *", "@hourly", "@every 5m"]) {
    assert.ok(parse(ok).success, ok);
  }
  for (const bad of ["* * * *", "0 3 * *", "1 2 3 4 5 6 7", ""]) {
    assert.ok(!parse(bad).success, bad);
  }
  const cron = {
    ...CronJob.parse(valid()),
    spec: { ...CronJob.parse(valid()).spec, schedule: "* * * *" },
  };
  assert.throws(() => nextSchedules(cron, Date.now()), /give five fields/);
});

Deno.test("the API server refuses a typo inside jobTemplate.spec and accepts a valid template", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const crd = CronJob.crd();
  const bytes = JSON.stringify(crd).length;
  const Bare = defineResource({
    group: "batch.kubeno.dev",
    version: "v1",
    kind: "CronJob",
    spec: z.object({ jobTemplate: builtinSchema("JobTemplateSpec", { descriptions: false }) }),
  });
  console.log(
    `cronjobs.batch.kubeno.dev CRD: ${bytes} bytes of JSON (JobTemplateSpec without ` +
      `descriptions: ${JSON.stringify(Bare.crd()).length})`,
  );
  await client.create(CustomResourceDefinition, crd);
  await waitFor(
    async () => (await cp.kubectl("get", "cronjobs.batch.kubeno.dev", "-A")).code === 0,
    {
      what: "cronjobs.batch.kubeno.dev to be served",
    },
  );
  const dir = await Deno.makeTempDir({ prefix: "kubeno-builtin-" });
  const dryRun = async (name: string, object: unknown) => {
    const path = `${dir}/${name}.json`;
    await Deno.writeTextFile(path, JSON.stringify(object));
    return cp.kubectl("apply", "--dry-run=server", "-f", path);
  };
  try {
    await t.step("a valid template is accepted", async () => {
      const r = await dryRun("valid", valid());
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /cronjob\.batch\.kubeno\.dev\/nightly created \(server dry run\)/);
    });

    await t.step("templte: in jobTemplate.spec is refused", async () => {
      const o = valid();
      const spec = o.spec.jobTemplate.spec as Record<string, unknown>;
      spec.templte = spec.template;
      delete spec.template;
      const r = await dryRun("typo", o);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /unknown field "spec\.jobTemplate\.spec\.templte"/);
    });

    await t.step("a container without a name, or two with one name, is refused", async () => {
      const o = valid();
      const pod = o.spec.jobTemplate.spec.template.spec;
      pod.containers = [{ ...pod.containers[0], name: undefined as unknown as string }];
      const r = await dryRun("noname", o);
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /spec\.jobTemplate\.spec\.template\.spec\.containers\[0\]\.name: Required value/,
      );
      const d = valid();
      const pod2 = d.spec.jobTemplate.spec.template.spec;
      pod2.containers = [pod2.containers[0], { ...pod2.containers[0] }];
      const r2 = await dryRun("dup", d);
      assert.notEqual(r2.code, 0);
      assert.match(r2.stderr, /containers\[1\]: Duplicate value/);
    });

    await t.step("a four-field schedule is refused by the API server", async () => {
      const o = valid();
      o.spec.schedule = "* * * *";
      const r = await dryRun("four", o);
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /spec\.schedule: Invalid value: "\* \* \* \*": spec\.schedule in body should match/,
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
