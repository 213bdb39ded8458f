// One control plane per test file: the file's steps register with `step` and run, in order,
// inside one Deno test that owns the control plane and an admin client.
import { type ControlPlane, startControlPlane } from "../testing.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { uniqueName } from "./_helpers.ts";

/** What {@linkcode sharedPlane} gives a test file. */
export interface SharedPlane {
  /** Registers a step of the file's one test. */
  step(name: string, fn: () => Promise<void>): void;
  /** Creates a namespace with a unique name and returns the name. */
  namespace(): Promise<string>;
}

/**
 * Registers the file's one test, `title`: it starts a control plane, hands it and an admin
 * client to `use` (the file keeps them in its own variables), then runs the steps.
 */
export function sharedPlane(
  title: string,
  prefix: string,
  use: (cp: ControlPlane, admin: Client) => void,
): SharedPlane {
  const steps: [string, () => Promise<void>][] = [];
  let admin: Client | undefined;
  Deno.test(title, async (t) => {
    await using plane = await startControlPlane();
    using client = await createClient({ kubeconfig: plane.kubeconfigPath });
    admin = client;
    use(plane, client);
    for (const [name, fn] of steps) await t.step(name, fn);
  });
  return {
    step: (name, fn) => void steps.push([name, fn]),
    async namespace() {
      const name = uniqueName(prefix);
      await admin!.create(Namespace, { metadata: { name } });
      return name;
    },
  };
}
