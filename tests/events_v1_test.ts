// EventRecorder against a real API server: Events go through events.k8s.io/v1, repeats grow
// one Event's series, and core/v1 readers (kubectl describe, `client.list(Event)`) see the
// same Event with its series.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Event } from "../src/core/kinds.ts";
import { EventsV1Event } from "../src/core/kinds_cluster.ts";
import { EventRecorder } from "../src/runtime/controller/events.ts";

Deno.test("EventRecorder writes events.k8s.io/v1 Events with a series for repeats", async () => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const cm = await client.create(ConfigMap, { metadata: { name: "evented" }, data: {} }, {
    namespace: "default",
  });
  const events = new EventRecorder(client, { component: "events-test", host: "pod-1" });
  events.warning(cm, "Failed", "No luck");
  events.warning(cm, "Failed", "No luck");
  await events.warning(cm, "Failed", "No luck");
  await events.normal(cm, "Fixed", "Better now");

  const v1 = (await client.list(EventsV1Event, { namespace: "default" })).items
    .filter((e) => e.regarding?.uid === cm.metadata.uid);
  assert.equal(v1.length, 2, JSON.stringify(v1));
  const failed = v1.find((e) => e.reason === "Failed")!;
  assert.equal(failed.series?.count, 3);
  assert.equal(failed.reportingController, "events-test");
  assert.equal(failed.reportingInstance, "pod-1");
  assert.equal(failed.note, "No luck");
  assert.equal(v1.find((e) => e.reason === "Fixed")?.series, undefined);

  // The same Event through core/v1, as kubectl describe reads it.
  const core = (await client.list(Event, {
    namespace: "default",
    fieldSelector: `involvedObject.uid=${cm.metadata.uid},reason=Failed`,
  })).items;
  assert.equal(core.length, 1);
  assert.equal(core[0].message, "No luck");
  assert.equal(core[0].type, "Warning");
  // A core/v1 reader sees the series (kubectl describe prints it as "x3 over ...").
  assert.equal(core[0].series?.count, 3);
});
