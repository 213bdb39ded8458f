import assert from "node:assert/strict";
import { ApiError } from "../../client/errors/api_error.ts";
import { resource } from "../../core/resource.ts";
import type { CustomResourceDefinition } from "../../core/api/apiextensions/v1.ts";
import type { ObjectEvent } from "../watch/watch.ts";
import type { InformerFactory } from "./informer_factory.ts";
import { ServedKinds } from "./served_kinds.ts";

const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
const Metric = resource({ group: "metrics.example.com", version: "v1", kind: "Metric" });

function setup(served: Record<string, string[]>) {
  let handler: ((ev: ObjectEvent<CustomResourceDefinition>) => void) | undefined;
  const informers = {
    for: () => ({
      onEvent: (fn: typeof handler) => {
        handler = fn;
        return () => void (handler = undefined);
      },
    }),
  } as unknown as Pick<InformerFactory, "for">;
  const client = {
    request: <R>(_m: string, path: string): Promise<R> => {
      const gv = path.slice("/apis/".length);
      if (!served[gv]) {
        return Promise.reject(
          new ApiError({ verb: "get", kind: "", apiVersion: "", plural: path }, {
            code: 404,
            reason: "NotFound",
            serverMessage: "404 page not found",
          }),
        );
      }
      return Promise.resolve({ resources: served[gv].map((name) => ({ name })) } as R);
    },
  };
  const kinds = new ServedKinds({ client, informers });
  const heard: string[] = [];
  kinds.follow(Widget, (s) => void heard.push(`widget ${s}`));
  kinds.follow(Metric, (s) => void heard.push(`metric ${s}`));
  const emit = (ev: ObjectEvent<CustomResourceDefinition>) => handler!(ev);
  return { kinds, heard, emit };
}

function crd(established: boolean, served = true): CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      names: { kind: "Widget", plural: "widgets" },
      scope: "Namespaced",
      versions: [{ name: "v1", served, storage: true }],
    },
    status: {
      conditions: [{ type: "Established", status: established ? "True" : "False" }],
    },
  } as CustomResourceDefinition;
}

Deno.test("ServedKinds follows a CRD from missing to established to deleted", async () => {
  const t = setup({ "metrics.example.com/v1": ["metrics"] });
  await t.kinds.start();
  assert.deepEqual(t.heard.sort(), ["metric true", "widget false"]);
  assert.deepEqual(t.kinds.missing(), [Widget]);
  t.emit({ type: "added", object: crd(false) });
  assert.equal(t.kinds.served(Widget), false, "not established yet");
  t.emit({ type: "modified", object: crd(true), old: crd(false) });
  assert.equal(t.kinds.served(Widget), true);
  t.emit({ type: "modified", object: crd(true, false), old: crd(true) });
  assert.equal(t.kinds.served(Widget), false, "the version is no longer served");
  t.emit({ type: "modified", object: crd(true), old: crd(true, false) });
  t.emit({ type: "deleted", object: crd(true) });
  assert.deepEqual(t.heard.filter((h) => h.startsWith("widget")), [
    "widget false",
    "widget true",
    "widget false",
    "widget true",
    "widget false",
  ]);
  assert.equal(t.kinds.served(Metric), true, "an aggregated API stays as discovery found it");
});
