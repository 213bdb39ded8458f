import assert from "node:assert/strict";
import { z } from "zod";
import { admission, AdmissionDenied } from "./admission.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import { defineResource } from "../schema/define_resource.ts";
import { applyJsonPatch } from "../../tests/_json_patch.ts";
import type { JsonPatchOperation } from "../client/types.ts";

const Myapp = defineResource({
  group: "apps.kubeno.dev",
  version: "v1alpha1",
  kind: "Myapp",
  spec: z.object({ image: z.string(), replicas: z.int().default(1) }),
});

function request(over: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: "u",
    kind: { group: "apps.kubeno.dev", version: "v1alpha1", kind: "Myapp" },
    resource: { group: "apps.kubeno.dev", version: "v1alpha1", resource: "myapps" },
    operation: "CREATE",
    userInfo: { username: "me" },
    object: { metadata: { name: "a", labels: { "a/b": "1" } }, spec: { image: "x", replicas: 1 } },
    ...over,
  };
}

Deno.test("admission names webhooks and paths kubebuilder-style and checks options", () => {
  const w = admission(Myapp, { default() {}, validate() {} });
  assert.equal(w.mutating?.name, "mmyapp.apps.kubeno.dev");
  assert.equal(w.validating?.path, "/validate-apps-kubeno-dev-v1alpha1-myapp");
  assert.equal(w.failurePolicy, "Fail");
  assert.equal(w.timeoutSeconds, 10);
  assert.equal(w.sideEffects, "None");
  assert.deepEqual(w.validating?.operations, ["CREATE", "UPDATE"]);
  assert.throws(() => admission(Myapp, {}), /set default or validate/);
  assert.throws(() => admission(Myapp, { validate() {}, name: "short.name" }), /three segments/);
  assert.throws(() => admission(Myapp, { validate() {}, timeoutSeconds: 31 }), /1 to 30/);
  const [cfg] = w.manifests({
    operatorName: "op",
    namespace: "ns",
    serviceName: "op-webhook",
    servicePort: 443,
    containerPort: 9443,
  });
  assert.equal(cfg.kind, "ValidatingWebhookConfiguration");
});

Deno.test("default: in-place changes and returned objects become an escaped JSON patch", async () => {
  const inPlace = admission(Myapp, {
    default(app, { warn }) {
      app.spec.replicas = 3;
      app.metadata.labels!["x~y/z"] = "2";
      warn("defaulted");
    },
  });
  const req = request();
  const res = await inPlace.mutate(req);
  assert.equal(res.allowed, true);
  assert.deepEqual(res.warnings, ["defaulted"]);
  const patch: JsonPatchOperation[] = JSON.parse(atob(res.patch!));
  assert.deepEqual(patch, [
    { op: "add", path: "/metadata/labels/x~0y~1z", value: "2" },
    { op: "replace", path: "/spec/replicas", value: 3 },
  ]);
  assert.deepEqual((applyJsonPatch(req.object, patch) as any).spec.replicas, 3);
  assert.equal((req.object as any).spec.replicas, 1, "the request's object is not touched");

  const returned = admission(Myapp, {
    default: (app) => ({ ...app, spec: { ...app.spec, image: "y" } }),
  });
  const r2 = await returned.mutate(request());
  assert.deepEqual(JSON.parse(atob(r2.patch!)), [{
    op: "replace",
    path: "/spec/image",
    value: "y",
  }]);
  const none = await admission(Myapp, { default() {} }).mutate(request());
  assert.equal(none.patch, undefined);
});

Deno.test("validate: strings, results, AdmissionDenied and exceptions become responses", async () => {
  const w = admission(Myapp, {
    validate({ operation, object, oldObject }) {
      if (operation === "DELETE") {
        throw new AdmissionDenied("protected", { warnings: ["w"], code: 409 });
      }
      if (object.spec.image === "boom") throw new Error("kaboom");
      if (object.spec.image === "str") return "bad image";
      if (operation === "UPDATE") return { warnings: [`from ${oldObject.spec.replicas}`] };
    },
    operations: ["CREATE", "UPDATE", "DELETE"],
  });
  const obj = (image: string) => ({ metadata: { name: "a" }, spec: { image, replicas: 1 } });
  assert.deepEqual(await w.validate(request({ object: obj("ok") })), { uid: "u", allowed: true });
  assert.deepEqual((await w.validate(request({ object: obj("str") }))).status, {
    code: 403,
    reason: "Forbidden",
    message: "bad image",
  });
  const boom = await w.validate(request({ object: obj("boom") }));
  assert.equal(boom.allowed, false);
  assert.match(boom.status!.message!, /kaboom/);
  const del = await w.validate(
    request({ operation: "DELETE", object: undefined, oldObject: obj("x") }),
  );
  assert.deepEqual([del.allowed, del.status?.code, del.warnings], [false, 409, ["w"]]);
  const upd = await w.validate(
    request({ operation: "UPDATE", object: obj("ok"), oldObject: obj("ok") }),
  );
  assert.deepEqual([upd.allowed, upd.warnings], [true, ["from 1"]]);
  const wrong = await w.validate(request({ kind: { group: "", version: "v1", kind: "Pod" } }));
  assert.deepEqual([wrong.allowed, wrong.status?.code], [false, 400]);
  assert.match(wrong.status!.message!, /got "v1, Kind=Pod"/);
});
