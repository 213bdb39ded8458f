// One fleet replica in its own process, for tests/multicluster_replicas_test.ts (which
// SIGKILLs it): `deno run -A tests/_fleet_replica.ts <hub kubeconfig> <identity>`. Prints
// `engaged <cluster>`, `disengaged <cluster>` and `reconciled <cluster> <start> <end>` lines.
import { createClient } from "../src/client/client.ts";
import { fleetReplica } from "./_fleet_replica_options.ts";

const [kubeconfig, identity] = Deno.args;
using hub = await createClient({ kubeconfig });
const fleet = fleetReplica(hub, identity, (line) => console.log(line));
await fleet.start();
