/**
 * The operator-sdk Go Operator Tutorial (its `memcached_controller.go`, as operator-sdk
 * v1.33 to v1.42 ship it in `testdata/go/v4/memcached-operator`), written with kubeno: a
 * `Memcached` custom resource (`cache.example.com/v1alpha1`) whose controller runs memcached
 * as a Deployment of `spec.size` pods, reports `Available` and `Degraded` conditions, and
 * records a Warning Event through a finalizer when a Memcached is deleted.
 *
 * The reconcile follows the tutorial step by step. What its author no longer writes:
 *
 * - the owner reference on the Deployment: `ctx.create` makes the Memcached its controller
 *   (the tutorial's `ctrl.SetControllerReference`);
 * - adding and removing the finalizer, and the `isMemcachedMarkedToBeDeleted` branch: kubeno
 *   adds `cache.example.com/finalizer` before the first reconcile, calls `finalize` once the
 *   object is being deleted, and removes the finalizer after it returns;
 * - re-fetching the Memcached after each status write "to avoid the object has been
 *   modified": `ctx.setCondition` computes the conditions from the newest state the context
 *   knows, its own writes included;
 * - the "not found, must be deleted" branch: objects that no longer exist are not reconciled;
 * - RBAC markers: the operator derives its RBAC from `Memcached`, `owns` and `finalizer`.
 *
 * Where it differs: the operand image is fixed here rather than read from `MEMCACHED_IMAGE`
 * (so the tutorial's "Failed to create Deployment" branch for a missing variable has nothing
 * to report), `spec.size` is required and `spec.containerPort` defaults to the sample's 11211.
 *
 * ```sh
 * deno run -A examples/memcached.ts install     # apply the CRD, wait until it is Established
 * deno run -A examples/memcached.ts             # run the operator against the current kubeconfig
 * kubectl apply -f examples/memcached-sample.yaml
 * kubectl patch memcached memcached-sample -p '{"spec":{"size": 5}}' --type=merge
 * ```
 *
 * @module
 */
import {
  conditionsSchema,
  defineResource,
  Deployment,
  type ObjectOf,
  operator,
  reconcile,
  requeue,
  z,
} from "../mod.ts";

/** The finalizer the controller keeps on each Memcached until its finalizer operations ran. */
const memcachedFinalizer = "cache.example.com/finalizer";

// Definitions to manage status conditions
/** The status of the Deployment reconciliation. */
const typeAvailableMemcached = "Available";
/** Used when the custom resource is deleted and the finalizer operations are yet to occur. */
const typeDegradedMemcached = "Degraded";

/** The operand image the controller runs (the tutorial's `MEMCACHED_IMAGE`). */
export const MEMCACHED_IMAGE = "memcached:1.6.26-alpine3.19";

/** A Memcached: run memcached as `size` pods. */
export const Memcached = defineResource({
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
  description: "Memcached is the Schema for the memcacheds API",
  spec: z.object({
    size: z.int32().min(1).max(5).describe("Size defines the number of Memcached instances"),
    // The tutorial's sample port: left out, the tutorial's int32 is 0, which a Deployment refuses.
    containerPort: z.int32().default(11211).describe(
      "Port defines the port that will be used to init the container with the image",
    ),
  }),
  status: z.object({
    conditions: conditionsSchema.describe(
      "Conditions store the status conditions of the Memcached instances",
    ),
  }),
});

/** A Memcached object as the controller sees it. */
export type MemcachedObject = ObjectOf<typeof Memcached>;

/** The labels for selecting the resources. */
export function labelsForMemcached(): Record<string, string> {
  const imageTag = MEMCACHED_IMAGE.split(":")[1];
  return {
    "app.kubernetes.io/name": "memcached-operator",
    "app.kubernetes.io/version": imageTag,
    "app.kubernetes.io/managed-by": "MemcachedController",
  };
}

/** The Memcached Deployment: `size` replicas of memcached, restricted as the tutorial's. */
export function deploymentForMemcached(memcached: MemcachedObject): Deployment {
  const ls = labelsForMemcached();
  const replicas = memcached.spec.size;
  return {
    apiVersion: Deployment.apiVersion,
    kind: Deployment.kind,
    metadata: {
      name: memcached.metadata.name!,
      namespace: memcached.metadata.namespace,
    },
    spec: {
      replicas,
      selector: { matchLabels: ls },
      template: {
        metadata: { labels: ls },
        spec: {
          securityContext: {
            runAsNonRoot: true,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [{
            image: MEMCACHED_IMAGE,
            name: "memcached",
            imagePullPolicy: "IfNotPresent",
            // Ensure restrictive context for the container
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 1001,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
            },
            ports: [{ containerPort: memcached.spec.containerPort, name: "memcached" }],
            command: ["memcached", "-m=64", "-o", "modern", "-v"],
          }],
        },
      },
    },
  };
}

/** Keeps a Deployment of `spec.size` memcached pods for each Memcached. */
export const controller = reconcile(Memcached, {
  owns: [Deployment],
  finalizer: memcachedFinalizer,
  async reconcile(memcached, ctx) {
    // Let's just set the status as Unknown when no status is available
    if (!memcached.status?.conditions?.length) {
      await ctx.setCondition(memcached, {
        type: typeAvailableMemcached,
        status: "Unknown",
        reason: "Reconciling",
        message: "Starting reconciliation",
      });
    }

    // Check if the deployment already exists, if not create a new one
    const found = ctx.cache.get(Deployment, memcached.metadata.name!);
    if (!found) {
      // Define a new deployment
      const dep = deploymentForMemcached(memcached);
      ctx.log.info("Creating a new Deployment {deployment}", {
        deployment: `${dep.metadata.namespace}/${dep.metadata.name}`,
      });
      await ctx.create(Deployment, dep);

      // Deployment created successfully
      // We will requeue the reconciliation so that we can ensure the state
      // and move forward for the next operations
      return requeue(60_000);
    }

    // Ensure the Deployment size is the same as the spec's
    const size = memcached.spec.size;
    if (found.spec?.replicas !== size) {
      const dep = structuredClone(found);
      dep.spec!.replicas = size;
      try {
        await ctx.update(Deployment, dep);
      } catch (err) {
        ctx.log.error("Failed to update Deployment {deployment}: {error}", {
          deployment: `${found.metadata.namespace}/${found.metadata.name}`,
          error: (err as Error).message,
        });
        await ctx.setCondition(memcached, {
          type: typeAvailableMemcached,
          status: "False",
          reason: "Resizing",
          message:
            `Failed to update the size for the custom resource (${memcached.metadata.name}): (${
              (err as Error).message
            })`,
        });
        throw err;
      }

      // Now, that we update the size we want to requeue the reconciliation
      // so that we can ensure that we have the latest state of the resource before
      // update. Also, it will help ensure the desired state on the cluster
      return requeue(0);
    }

    await ctx.setCondition(memcached, {
      type: typeAvailableMemcached,
      status: "True",
      reason: "Reconciling",
      message:
        `Deployment for custom resource (${memcached.metadata.name}) with ${size} replicas created successfully`,
    });
  },
  async finalize(memcached, ctx) {
    ctx.log.info("Performing Finalizer Operations for Memcached before delete CR");

    // Let's add here a status "Downgrade" to reflect that this resource began its process to be terminated.
    await ctx.setCondition(memcached, {
      type: typeDegradedMemcached,
      status: "Unknown",
      reason: "Finalizing",
      message:
        `Performing finalizer operations for the custom resource: ${memcached.metadata.name} `,
    });

    // Perform all operations required before removing the finalizer and allow
    // the Kubernetes API to remove the custom resource. The Deployment is not among them:
    // it is garbage-collected through its owner reference.
    await ctx.events.warning(
      memcached,
      "Deleting",
      `Custom Resource ${memcached.metadata.name} is being deleted from the namespace ${memcached.metadata.namespace}`,
    );

    await ctx.setCondition(memcached, {
      type: typeDegradedMemcached,
      status: "True",
      reason: "Finalizing",
      message:
        `Finalizer operations for custom resource ${memcached.metadata.name} name were successfully accomplished`,
    });
    // kubeno removes the finalizer once this returns.
  },
});

/** The operator program: `run` (default), `install`, `uninstall`, `manifests`, `version`. */
export const memcachedOperator = operator({
  name: "memcached-operator",
  version: "0.1.0",
  image: "ghcr.io/kubeno/memcached-operator:0.1.0",
  controllers: [controller],
  leaderElection: { leaseName: "memcached-operator" },
});

if (import.meta.main) await memcachedOperator.main();
