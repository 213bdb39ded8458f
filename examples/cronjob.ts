/**
 * The kubebuilder book's CronJob tutorial, written with kubeno: a `CronJob` custom resource
 * that runs a Job on a cron schedule, with `concurrencyPolicy` (Allow, Forbid, Replace),
 * `suspend`, `startingDeadlineSeconds`, history limits for finished Jobs, and a status with
 * the active Jobs and the last schedule time.
 *
 * As in the tutorial, the controller finds its Jobs through an index on their controller
 * owner — here answered from the cache (`ctx.cache.list(Job, { index })`), with no request to
 * the API server — and asks to run again at the next scheduled time. Schedules are parsed by
 * `cron-parser`: five fields, or six with seconds first (`*\/10 * * * * *`).
 *
 * ```sh
 * deno run -A examples/cronjob.ts install     # apply the CRD, wait until it is Established
 * deno run -A examples/cronjob.ts             # run the operator against the current kubeconfig
 * kubectl apply -f examples/cronjob-sample.yaml
 * ```
 *
 * @module
 */
import { CronExpressionParser } from "cron-parser";
import {
  controllerOf,
  defineResource,
  Job,
  type ObjectOf,
  type ObjectRef,
  operator,
  reconcile,
  requeue,
  TerminalError,
  z,
} from "../mod.ts";
import { isAlreadyExists } from "../client.ts";
import { builtinSchema } from "../schema/builtin.ts";
import { objectKey } from "../core.ts";

/** The annotation each Job carries: the time it was scheduled for (RFC 3339). */
export const SCHEDULED_AT = "batch.kubeno.dev/scheduled-at";

/** Most missed start times looked back over, as in the tutorial (and Kubernetes' own). */
const MAX_MISSED = 100;

/** A schedule's shape: a descriptor (`@hourly`, `@every 5m`), or five or six fields. */
export const SCHEDULE: RegExp = /^(@[a-z]+( \S+)?|\S+( +\S+){4,5})$/;

/** A CronJob: run `jobTemplate` as a Job at each time `schedule` names. */
export const CronJob = defineResource({
  group: "batch.kubeno.dev",
  version: "v1",
  kind: "CronJob",
  description: "CronJob runs a Job on a cron schedule",
  spec: z.object({
    // Five fields as kubebuilder's parser (robfig/cron's ParseStandard) takes them, or a
    // descriptor such as @hourly, or six with seconds first; cron-parser alone would also take
    // four, so the API server refuses other counts.
    schedule: z.string().regex(SCHEDULE).describe(
      "Cron schedule: five fields, or six with seconds first, e.g. '*/5 * * * *', or @hourly",
    ),
    timeZone: z.string().optional().describe("IANA time zone of the schedule; defaults to UTC"),
    startingDeadlineSeconds: z.int().min(0).optional().describe(
      "Seconds after a missed scheduled time within which the Job may still start",
    ),
    concurrencyPolicy: z.enum(["Allow", "Forbid", "Replace"]).default("Allow").describe(
      "Allow: run Jobs side by side; Forbid: skip a run while one is active; Replace: replace the active one",
    ),
    suspend: z.boolean().optional().describe("Stop scheduling runs; running Jobs go on"),
    successfulJobsHistoryLimit: z.int().min(0).default(3).describe("Finished Jobs to keep"),
    failedJobsHistoryLimit: z.int().min(0).default(1).describe("Failed Jobs to keep"),
    // The full batch/v1 JobTemplateSpec schema, as kubebuilder embeds it: a typo inside the
    // Job's spec is refused by the API server, not found when the Job is created.
    jobTemplate: builtinSchema("JobTemplateSpec").describe(
      "The Job to run: its labels, annotations and spec (batch/v1 JobTemplateSpec)",
    ),
  }),
  status: z.object({
    active: z.array(z.object({
      apiVersion: z.string(),
      kind: z.string(),
      name: z.string(),
      namespace: z.string().optional(),
      uid: z.string().optional(),
    })).optional().describe("Jobs running now"),
    lastScheduleTime: z.string().optional().describe("When a Job was last scheduled (RFC 3339)"),
  }),
  printerColumns: [
    { name: "Schedule", type: "string", jsonPath: ".spec.schedule" },
    { name: "Suspend", type: "boolean", jsonPath: ".spec.suspend" },
    { name: "Last Schedule", type: "date", jsonPath: ".status.lastScheduleTime" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
});

/** A CronJob object as the controller sees it. */
export type CronJobObject = ObjectOf<typeof CronJob>;

/**
 * The index of Jobs by controller owner: `namespace/name` of the CronJob that owns a Job.
 *
 * @param job A Job.
 * @returns Its owner's key, or nothing when a CronJob does not control it.
 */
export function jobOwner(job: Job): string[] {
  const ref = controllerOf(job);
  // Group and kind, not the whole apiVersion: Jobs created while another version of CronJob was
  // stored name that version in their owner reference, and are still this CronJob's.
  const group = ref?.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
  if (group !== CronJob.group || ref?.kind !== CronJob.kind) return [];
  return [objectKey({ namespace: job.metadata.namespace, name: ref.name })];
}

/** Whether a Job has finished, and how. */
export function finished(job: Job): "Complete" | "Failed" | undefined {
  const c = job.status?.conditions?.find((c) =>
    (c.type === "Complete" || c.type === "Failed") && c.status === "True"
  );
  return c?.type as "Complete" | "Failed" | undefined;
}

/** When a Job was scheduled for, from its annotation. */
export function scheduledAt(job: Job): number | undefined {
  const at = job.metadata.annotations?.[SCHEDULED_AT];
  const t = at ? Date.parse(at) : NaN;
  return Number.isNaN(t) ? undefined : t;
}

/**
 * The latest scheduled time missed since `earliest` (none when the schedule has not come
 * round since), and the next scheduled time after `now`.
 *
 * @throws {TerminalError} When the schedule cannot be parsed, or more than 100 start times
 * were missed (set or lower `startingDeadlineSeconds`).
 */
export function nextSchedules(
  cron: CronJobObject,
  now: number,
): { missed?: number; next: number } {
  const { schedule, timeZone, startingDeadlineSeconds } = cron.spec;
  const parse = (from: number) => {
    if (!SCHEDULE.test(schedule.trim())) {
      throw new TerminalError(
        `Cannot parse schedule "${schedule}" of CronJob ${cron.metadata.name}: give five fields (minute hour day-of-month month day-of-week), six with seconds first, or a descriptor such as @hourly`,
      );
    }
    try {
      return CronExpressionParser.parse(schedule, {
        currentDate: new Date(from),
        tz: timeZone ?? "UTC",
      });
    } catch (e) {
      throw new TerminalError(
        `Cannot parse schedule "${schedule}" of CronJob ${cron.metadata.name}: ${
          (e as Error).message
        }`,
      );
    }
  };
  const last = cron.status?.lastScheduleTime ?? cron.metadata.creationTimestamp;
  let earliest = last ? Date.parse(last) : now;
  if (startingDeadlineSeconds !== undefined) {
    earliest = Math.max(earliest, now - startingDeadlineSeconds * 1_000);
  }
  const next = parse(now).next().getTime();
  if (earliest > now) return { next };
  let missed: number | undefined;
  const times = parse(earliest);
  for (let starts = 0;; starts++) {
    const t = times.next().getTime();
    if (t > now) break;
    if (starts >= MAX_MISSED) {
      throw new TerminalError(
        `Cannot schedule CronJob ${cron.metadata.name}: more than ${MAX_MISSED} start times missed; set or lower spec.startingDeadlineSeconds`,
      );
    }
    missed = t;
  }
  return { missed, next };
}

/** The Job a CronJob runs for `scheduled`: named after the time, annotated with it. */
export function jobFor(cron: CronJobObject, scheduled: number) {
  const tpl = cron.spec.jobTemplate;
  return {
    metadata: {
      name: `${cron.metadata.name}-${Math.floor(scheduled / 1_000)}`,
      labels: { ...tpl.metadata?.labels },
      annotations: {
        ...tpl.metadata?.annotations,
        [SCHEDULED_AT]: new Date(scheduled).toISOString(),
      },
    },
    spec: structuredClone(tpl.spec),
  };
}

/** Options of {@linkcode cronJobController}. */
export interface CronJobControllerOptions {
  /**
   * The time source, in milliseconds since the epoch.
   * @default Date.now
   */
  now?: () => number;
}

/**
 * The CronJob controller, as the tutorial's `CronJobReconciler`.
 *
 * @param options The time source, for tests.
 * @returns The controller.
 */
export function cronJobController(options: CronJobControllerOptions = {}) {
  const now = options.now ?? Date.now;
  return reconcile(CronJob, {
    // Jobs are cached with an index on their controller owner.
    owns: [{ resource: Job, indexes: { byOwner: jobOwner } }],
    async reconcile(cron, ctx) {
      const jobs = ctx.cache.list(Job, {
        namespace: cron.metadata.namespace,
        index: { byOwner: ctx.key },
      });
      const active: Job[] = [], successful: Job[] = [], failed: Job[] = [];
      for (const job of jobs) {
        const state = finished(job);
        (state === "Complete" ? successful : state === "Failed" ? failed : active).push(job);
      }
      // The last run is the newest of what the status and the Jobs say.
      const known = [cron.status?.lastScheduleTime, ...jobs.map(scheduledAt)]
        .map((t) => typeof t === "string" ? Date.parse(t) : t)
        .filter((t): t is number => t !== undefined && !Number.isNaN(t));
      const lastScheduleTime = known.length
        ? new Date(Math.max(...known)).toISOString().replace(/\.000Z$/, "Z")
        : undefined;
      const refs: ObjectRef[] = active.map((j) => ({
        apiVersion: Job.apiVersion,
        kind: Job.kind,
        name: j.metadata.name!,
        namespace: j.metadata.namespace,
        uid: j.metadata.uid,
      }));
      cron = await ctx.patchStatus(cron, {
        active: refs.length ? refs : null,
        ...(lastScheduleTime ? { lastScheduleTime } : {}),
      });

      // History limits: delete the oldest finished Jobs beyond them.
      const byTime = (a: Job, b: Job) => (scheduledAt(a) ?? 0) - (scheduledAt(b) ?? 0);
      const limits = [
        [successful, cron.spec.successfulJobsHistoryLimit],
        [failed, cron.spec.failedJobsHistoryLimit],
      ] as const;
      for (const [list, limit] of limits) {
        for (const job of [...list].sort(byTime).slice(0, Math.max(0, list.length - limit))) {
          await deleteJob(job, "history limit");
        }
      }

      const t = now();
      const { missed, next } = nextSchedules(cron, t);
      const untilNext = requeue(Math.max(0, next - t));
      const at = (ms: number) => new Date(ms).toISOString();
      if (cron.spec.suspend) {
        if (missed) {
          ctx.log.info("CronJob {key} is suspended; skipping its run at {at}", {
            key: ctx.key,
            at: at(missed),
          });
        }
        return untilNext;
      }
      if (missed === undefined) return untilNext;
      const deadline = cron.spec.startingDeadlineSeconds;
      if (deadline !== undefined && missed + deadline * 1_000 < t) {
        ctx.log.info("CronJob {key} missed its run at {at}: past the starting deadline", {
          key: ctx.key,
          at: at(missed),
        });
        return untilNext;
      }
      if (cron.spec.concurrencyPolicy === "Forbid" && active.length) {
        ctx.log.info(
          "CronJob {key} skips its run at {at}: a Job is still active (concurrencyPolicy Forbid)",
          { key: ctx.key, at: at(missed) },
        );
        return untilNext;
      }
      if (cron.spec.concurrencyPolicy === "Replace") {
        for (const job of active) {
          await deleteJob(job, "replaced (concurrencyPolicy Replace)");
        }
      }
      // Created, not applied (as the tutorial does): a run whose Job exists already — an
      // earlier try created it and its answer was lost — is not created or announced twice.
      let job: Job;
      try {
        job = await ctx.create(Job, jobFor(cron, missed) as Job);
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
        return untilNext;
      }
      ctx.events.normal(cron, "SuccessfulCreate", `Created job ${job.metadata.name}`);
      ctx.log.info("CronJob {key} created Job {job} for {at}", {
        key: ctx.key,
        job: job.metadata.name,
        at: at(missed),
      });
      return untilNext;

      async function deleteJob(job: Job, why: string) {
        await ctx.delete(Job, job, { propagationPolicy: "Background" });
        ctx.log.info("CronJob {key} deleted Job {job}: {why}", {
          key: ctx.key,
          job: job.metadata.name,
          why,
        });
      }
    },
  });
}

/** The CronJob controller on the real clock. */
export const controller = cronJobController();

/** The operator program: `run` (default), `install`, `uninstall`, `manifests`, `version`. */
export const cronJobOperator = operator({
  name: "cronjob-operator",
  version: "0.1.0",
  image: "ghcr.io/kubeno/cronjob-operator:0.1.0",
  controllers: [controller],
  leaderElection: { leaseName: "cronjob-operator" },
});

if (import.meta.main) await cronJobOperator.main();
