// Denials with field causes, on a real control plane: a validating webhook (served in this
// process, registered as a local run registers it) that returns field errors, one that returns a
// plain string, and one that answers code 422 without causes.
//
// Shows: field errors reach the client as the API server's own validation errors do — HTTP 422,
// reason Invalid, details.kind/name and one cause per field — and kubectl prints them as it
// prints the API server's (`The CronJob "x" is invalid: spec.schedule: Invalid value: …`); a
// plain string stays a plain denial (Forbidden); code 422 reads as Invalid, not Forbidden.
import assert from "node:assert/strict";
import { z } from "zod";
import { startControlPlane } from "../testing.ts";
import { admission, AdmissionDenied } from "../src/webhook/admission.ts";
import { field } from "../src/webhook/field_error.ts";
import { ApiError } from "../src/client/errors/api_error.ts";
import { createClient } from "../src/client/client.ts";
import { defineResource } from "../src/schema/define_resource.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import { serveWebhooks } from "../src/webhook/webhooks.ts";
import { waitFor } from "./_helpers.ts";

const CronJob = defineResource({
  group: "batch.kubeno.dev",
  version: "v1",
  kind: "CronJob",
  spec: z.object({
    schedule: z.string(),
    suspend: z.boolean().optional(),
    mode: z.string().optional(),
  }),
});

Deno.test("validator field errors reach kubectl as reason Invalid with causes", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  await client.create(CustomResourceDefinition, CronJob.crd());
  await waitFor(() => client.list(CronJob, { namespace: "default", limit: 1 }).then(() => true), {
    what: "cronjobs to be served",
  });
  const webhook = admission(CronJob, {
    validate({ object }) {
      if (!object) return;
      const { schedule, mode } = object.spec;
      if (mode === "plain") return "CronJobs in plain mode are not allowed here";
      if (mode === "coded") return { allowed: false, code: 422, message: "mode coded is refused" };
      if (mode === "thrown") {
        throw new AdmissionDenied("ignored", {
          fieldErrors: [field.notSupported("spec.mode", mode, ["fast", "slow"])],
        });
      }
      const minute = Number(schedule.split(" ")[0]);
      const errors = [];
      if (minute > 59) {
        errors.push(field.invalid("spec.schedule", schedule, "minute must be 0-59"));
      }
      if (mode === "both") errors.push(field.required("spec.suspend", "set it with mode both"));
      return errors;
    },
  });
  await using _running = await serveWebhooks(client, [webhook], {
    name: "cron-operator",
    namespace: "default",
    local: true,
    port: 0,
  });
  const dir = await Deno.makeTempDir({ prefix: "kubeno-denial-" });
  const apply = async (name: string, spec: Record<string, unknown>) => {
    const path = `${dir}/${name}.json`;
    await Deno.writeTextFile(
      path,
      JSON.stringify({
        apiVersion: "batch.kubeno.dev/v1",
        kind: "CronJob",
        metadata: { name, namespace: "default" },
        spec,
      }),
    );
    return cp.kubectl("apply", "-f", path);
  };
  const refusal = async (spec: Record<string, unknown>): Promise<ApiError> => {
    try {
      await client.create(
        CronJob,
        { metadata: { name: "x", namespace: "default" }, spec } as never,
      );
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
    throw new Error(`Created a CronJob with ${JSON.stringify(spec)}`);
  };
  await waitFor(async () => (await apply("probe", { schedule: "61 * * * *" })).code !== 0, {
    what: "the webhook to bite",
  });

  try {
    await t.step("one field error: kubectl prints the API server's format", async () => {
      const r = await apply("x", { schedule: "61 * * * *" });
      assert.notEqual(r.code, 0);
      assert.equal(
        r.stderr.trim(),
        'The CronJob "x" is invalid: spec.schedule: Invalid value: "61 * * * *": minute must be 0-59',
      );
      const err = await refusal({ schedule: "61 * * * *" });
      assert.equal(err.code, 422);
      assert.equal(err.reason, "Invalid");
      assert.deepEqual(err.status?.details?.causes, [{
        reason: "FieldValueInvalid",
        field: "spec.schedule",
        message: 'Invalid value: "61 * * * *": minute must be 0-59',
      }]);
      assert.equal(err.status?.details?.kind, "CronJob");
      assert.equal(err.status?.details?.name, "x");
      assert.match(
        err.serverMessage,
        /denied the request: CronJob\.batch\.kubeno\.dev "x" is invalid: spec\.schedule: Invalid value: "61 \* \* \* \*": minute must be 0-59$/,
      );
    });

    await t.step("two field errors: one line each, as kubectl lists causes", async () => {
      const r = await apply("x", { schedule: "75 * * * *", mode: "both" });
      assert.notEqual(r.code, 0);
      assert.equal(
        r.stderr.trim(),
        [
          'The CronJob "x" is invalid: ',
          '* spec.schedule: Invalid value: "75 * * * *": minute must be 0-59',
          "* spec.suspend: Required value: set it with mode both",
        ].join("\n"),
      );
    });

    await t.step("AdmissionDenied with field errors", async () => {
      const r = await apply("x", { schedule: "0 * * * *", mode: "thrown" });
      assert.equal(
        r.stderr.trim(),
        'The CronJob "x" is invalid: spec.mode: Unsupported value: "thrown": supported values: "fast", "slow"',
      );
    });

    await t.step("a plain string stays a plain denial", async () => {
      const r = await apply("x", { schedule: "0 * * * *", mode: "plain" });
      assert.match(
        r.stderr,
        /^Error from server \(Forbidden\): .*admission webhook "vcronjob\.batch\.kubeno\.dev" denied the request: CronJobs in plain mode are not allowed here/,
      );
      const err = await refusal({ schedule: "0 * * * *", mode: "plain" });
      assert.equal(err.code, 403);
      assert.equal(err.reason, "Forbidden");
    });

    await t.step("code 422 reads as Invalid, not Forbidden", async () => {
      const err = await refusal({ schedule: "0 * * * *", mode: "coded" });
      assert.equal(err.code, 422);
      assert.equal(err.reason, "Invalid");
      const r = await apply("x", { schedule: "0 * * * *", mode: "coded" });
      assert.doesNotMatch(r.stderr, /Forbidden/);
    });

    await t.step("a valid object is admitted", async () => {
      const r = await apply("x", { schedule: "5 * * * *" });
      assert.equal(r.code, 0, r.stderr);
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
