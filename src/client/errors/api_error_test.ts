import assert from "node:assert/strict";
import {
  ApiError,
  type ApiErrorTarget,
  ConnectionError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
} from "./api_error.ts";

const cm: ApiErrorTarget = {
  verb: "get",
  kind: "ConfigMap",
  apiVersion: "v1",
  plural: "configmaps",
  name: "foo",
  namespace: "default",
};

Deno.test("ApiError reads a Status: reason, message, causes, retry", () => {
  const err = ApiError.fromStatus({ ...cm, verb: "create" }, 422, {
    kind: "Status",
    status: "Failure",
    reason: "Invalid",
    code: 422,
    message: 'ConfigMap "foo" is invalid: data.x: Invalid value',
    details: {
      name: "foo",
      kind: "ConfigMap",
      causes: [{ reason: "FieldValueInvalid", message: "Invalid value", field: "data.x" }],
      retryAfterSeconds: 3,
    },
  });
  assert.equal(err.name, "ApiError");
  assert.equal(err.code, 422);
  assert.equal(err.reason, "Invalid");
  assert.deepEqual(err.causes.map((c) => c.field), ["data.x"]);
  assert.equal(err.retryAfterSeconds, 3);
  assert.equal(
    err.message,
    'Cannot create ConfigMap "default/foo": Invalid: ConfigMap "foo" is invalid: data.x: Invalid value',
  );
  assert.ok(isInvalid(err) && !isNotFound(err) && !isConflict(err));
});

Deno.test("each helper matches its reason and only that", () => {
  const helpers = {
    NotFound: [404, isNotFound],
    Conflict: [409, isConflict],
    AlreadyExists: [409, isAlreadyExists],
    Forbidden: [403, isForbidden],
    Invalid: [422, isInvalid],
    Gone: [410, isGone],
    Unauthorized: [401, isUnauthorized],
    TooManyRequests: [429, isTooManyRequests],
  } as const;
  for (const [reason, [code]] of Object.entries(helpers)) {
    const err = ApiError.fromStatus(cm, code, {
      kind: "Status",
      reason,
      code,
      message: "m",
      details: { name: "foo", kind: "configmaps" },
    });
    for (const [other, [, is]] of Object.entries(helpers)) {
      assert.equal(is(err), other === reason, `${other}(${reason})`);
    }
  }
  assert.ok(isGone(ApiError.fromStatus(cm, 410, { kind: "Status", reason: "Expired", code: 410 })));
});

Deno.test("a non-Status body falls back to the code's reason and the Retry-After header", () => {
  const err = ApiError.fromStatus(
    { ...cm, verb: "list", name: undefined },
    429,
    "slow down\n",
    "7",
  );
  assert.equal(err.reason, "TooManyRequests");
  assert.equal(err.retryAfterSeconds, 7);
  assert.ok(isTooManyRequests(err));
  assert.equal(
    err.message,
    'Cannot list configmaps in namespace "default": TooManyRequests: slow down',
  );
});

Deno.test("a 404 for the whole path is an unknown resource, not a missing object", () => {
  const target: ApiErrorTarget = {
    verb: "get",
    kind: "Widget",
    apiVersion: "example.com/v1",
    plural: "widgets",
    name: "w",
    namespace: "ns",
  };
  const plain = ApiError.fromStatus(target, 404, "404 page not found");
  const status = ApiError.fromStatus(target, 404, {
    kind: "Status",
    reason: "NotFound",
    code: 404,
    message: "the server could not find the requested resource",
    details: {},
  });
  for (const err of [plain, status]) {
    assert.ok(err.resourceUnknown);
    assert.ok(!isNotFound(err));
    assert.equal(
      err.message,
      'Cannot get Widget "ns/w": the server does not know resource "widgets.example.com/v1" ' +
        "(is its CustomResourceDefinition installed?)",
    );
  }
  const builtin = ApiError.fromStatus(
    { ...target, kind: "Deployment", apiVersion: "apps/v1", plural: "deployments" },
    404,
    "404 page not found",
  );
  assert.match(builtin.message, /does not know resource "deployments.apps\/v1"$/);
});

Deno.test("ConnectionError flattens fetch's cause chain into one line", () => {
  const inner = new Error("tcp connect error: Connection refused (os error 111)");
  const fetchErr = new TypeError(
    "error sending request for url (https://127.0.0.1:1/api/v1/pods): client error (Connect): tcp connect error: Connection refused (os error 111)",
    { cause: inner },
  );
  const err = new ConnectionError("https://127.0.0.1:1", "list", fetchErr);
  assert.equal(err.name, "ConnectionError");
  assert.equal(err.server, "https://127.0.0.1:1");
  assert.equal(
    err.message,
    'Cannot list from Kubernetes API server "https://127.0.0.1:1": tcp connect error: Connection refused (os error 111)',
  );
  assert.equal(err.cause, fetchErr);
});
