// What the fleet tests share: the example fleet operator's manifests as printed by its
// documented commands, an operator kubeconfig with only the RBAC they grant, a member's
// kubeconfig Secret on the hub, and the example's labelled Namespaces and settings.
import assert from "node:assert/strict";
import type { ControlPlane } from "../testing.ts";
import type { Client } from "../src/client/client.ts";
import { ConfigMap, Namespace, Secret } from "../src/core/kinds.ts";
import { KUBECONFIG_SECRET_LABEL } from "../src/runtime/cluster/provider.ts";
import { FLEET_NAMESPACE, SYNC_LABEL } from "../examples/fleet.ts";
import { serviceAccountKubeconfig, uniqueName } from "./_helpers.ts";

const printed = new Map<string, Promise<string>>();
/**
 * `deno run -A examples/fleet.ts manifests` (the hub's set) or `manifests --member`, run as
 * the README and the example's module doc write them.
 */
function printedManifests(set: "hub" | "member"): Promise<string> {
  let text = printed.get(set);
  if (!text) {
    text = (async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "examples/fleet.ts",
          "manifests",
          ...(set === "member" ? ["--member"] : []),
        ],
        cwd: new URL("../", import.meta.url).pathname,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      assert.equal(out.code, 0, dec.decode(out.stderr));
      const yaml = dec.decode(out.stdout);
      assert.match(yaml, /kind: ServiceAccount/);
      assert.equal(yaml.includes("kind: Deployment"), set === "hub", "only the hub set deploys");
      return yaml;
    })();
    printed.set(set, text);
  }
  return text;
}

/**
 * Applies one of the example's manifest sets on `cp` (`manifests` or `manifests --member`) and
 * returns a kubeconfig holding a token of the operator's ServiceAccount there: the operator
 * runs with only the RBAC the manifests grant.
 */
export async function operatorKubeconfig(cp: ControlPlane, set: "hub" | "member"): Promise<string> {
  const file = `${cp.dir}/fleet-${set}.yaml`;
  await Deno.writeTextFile(file, await printedManifests(set));
  const applied = await cp.kubectl("apply", "-f", file);
  assert.equal(applied.code, 0, applied.stderr);
  return await serviceAccountKubeconfig(cp, FLEET_NAMESPACE, "fleet-operator");
}

/** Registers member `name`: its kubeconfig as a labelled Secret on the hub. */
export async function register(hub: Client, name: string, text: string): Promise<void> {
  await hub.create(Secret, {
    metadata: { name, namespace: FLEET_NAMESPACE, labels: { [KUBECONFIG_SECRET_LABEL]: "true" } },
    data: { kubeconfig: btoa(text) },
  });
}

/** A Namespace labelled for the settings; resolves with its name. */
export async function syncedNamespace(client: Client, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await client.create(Namespace, { metadata: { name, labels: { [SYNC_LABEL]: "true" } } });
  return name;
}

/** The settings ConfigMap's data in `ns`, or undefined. */
export async function settings(
  client: Client,
  ns: string,
): Promise<Record<string, string> | undefined> {
  try {
    return (await client.get(ConfigMap, "fleet-settings", { namespace: ns })).data;
  } catch {
    return undefined;
  }
}
