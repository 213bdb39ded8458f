// The kubebuilder CronJob tutorial (examples/cronjob.ts) end to end, driven as a user drives
// it: `install`, the operator running in the background, CronJobs applied against a real
// control plane with workloads, so that Jobs' pods run on kwok's fake nodes. Schedules are
// seconds-level (`*/2 * * * * *`) so runs come every two seconds; kwok's per-pod stage
// annotations decide whether a Job's pod completes at once or runs for an hour.
//
// The README's commands run as written, in the checkout with the cluster in KUBECONFIG:
// `deno run -A examples/cronjob.ts install`, then `run` (no flag: the default ports, so this
// file runs under `flock /tmp/kubeno-ports.lock`), then `kubectl apply -f
// examples/cronjob-sample.yaml`, whose first Job is awaited. Only the lagged operator of the
// second step gets flags: it must talk through the lag proxy.
import assert from "node:assert/strict";
import { createClient, Event, isNotFound, Job, Namespace } from "../mod.ts";
import { startControlPlane, startLagProxy } from "../testing.ts";
import { freePort } from "../src/testing/process.ts";
import { CronJob, type CronJobObject, SCHEDULED_AT } from "../examples/cronjob.ts";
import { type RunningExample, startExample, waitFor } from "./_helpers.ts";
import { assertDefaultPortsFree } from "./_ports.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const EXAMPLE = new URL("../examples/cronjob.ts", import.meta.url).pathname;

/** `deno run -A examples/cronjob.ts <args>` typed in the checkout, stderr collected. */
function asDocumented(args: string[], env: Record<string, string>): RunningExample {
  return startExample(EXAMPLE, [], env, {
    argv: ["run", "-A", "examples/cronjob.ts", ...args],
    cwd: ROOT,
  });
}

const NS = "default";

/**
 * kwok stage annotations: the pod becomes ready at once and completes after `complete`.
 * kwok waits the jitter delay instead whenever it is not longer than the delay (a jitter of
 * "0s" would complete every pod at once), so both are the same: exactly `complete`.
 */
function kwokTiming(complete: string): Record<string, string> {
  return {
    "pod-ready.stage.kwok.x-k8s.io/delay": "0s",
    "pod-ready.stage.kwok.x-k8s.io/jitter-delay": "0s",
    "pod-complete.stage.kwok.x-k8s.io/delay": complete,
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": complete,
  };
}

function cronJob(
  name: string,
  spec: Partial<CronJobObject["spec"]>,
  complete: string,
): Omit<CronJobObject, "status"> {
  return {
    apiVersion: CronJob.apiVersion,
    kind: CronJob.kind,
    metadata: { name, namespace: NS },
    spec: {
      schedule: "*/2 * * * * *",
      concurrencyPolicy: "Allow",
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 1,
      ...spec,
      jobTemplate: {
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { annotations: kwokTiming(complete) },
            spec: {
              containers: [{ name: "hello", image: "busybox:1.36", args: ["echo", "hello"] }],
              restartPolicy: "Never",
            },
          },
        },
      },
    },
  };
}

Deno.test("examples/cronjob.ts end to end: schedules, concurrency, history, suspend, GC", async (t) => {
  await assertDefaultPortsFree();
  await using cp = await startControlPlane({ workloads: true });
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  const env = {
    NO_COLOR: "1",
    KUBECONFIG: cp.kubeconfigPath,
    POD_NAMESPACE: "",
    WATCH_NAMESPACE: "",
  };

  const jobsOf = async (cron: string) =>
    (await client.list(Job, { namespace: NS })).items.filter((j) =>
      j.metadata.ownerReferences?.some((o) => o.kind === "CronJob" && o.name === cron)
    );
  const created = async (cron: string) =>
    (await client.list(Event, { namespace: NS })).items.filter((e) =>
      e.reason === "SuccessfulCreate" && e.involvedObject?.name === cron &&
      e.involvedObject?.kind === "CronJob"
    ).reduce((n, e) => n + (e.series?.count ?? e.count ?? 1), 0);
  const finished = (j: Job) =>
    j.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True");

  await t.step("install applies the CRD", async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "examples/cronjob.ts", "install"],
      cwd: ROOT,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    await waitFor(() => client.list(CronJob, { namespace: NS }).then(() => true), {
      what: "cronjobs.batch.kubeno.dev to be served",
    });
  });

  await t.step(
    "with its Job watch 1.5 s late: one Job per scheduled time, none missed, Forbid one at a time",
    async () => {
      // The operator as a user runs it, through the lag proxy: its cache shows every Job
      // 1.5 s after the API server has it, so each reconcile right after a create (the
      // status write's echo, the next run two seconds on) runs while the cache lacks the Job
      // it just created. Without expectations it would create that run again (AlreadyExists)
      // or, under Forbid, start a second Job while one is active.
      await using proxy = await startLagProxy({ kubeconfig: cp.kubeconfigPath });
      proxy.delay({ group: "batch", resource: "jobs" }, 1_500);
      const ns = "lag";
      await client.create(Namespace, { metadata: { name: ns } });
      const metricsPort = freePort();
      const lagged = startExample(EXAMPLE, [
        `--kubeconfig=${proxy.kubeconfigPath}`,
        `--namespace=${ns}`,
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
        "--metrics-secure=false",
        "--health-probe-bind-address=0",
      ], env);
      const laggedJobs = async (cron: string) =>
        (await client.list(Job, { namespace: ns })).items.filter((j) =>
          j.metadata.ownerReferences?.some((o) => o.kind === "CronJob" && o.name === cron)
        );
      const metric = async (re: RegExp) => {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        return [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
      };
      try {
        const specs = [
          cronJob("allow", { successfulJobsHistoryLimit: 100 }, "0s"),
          cronJob("forbid", { concurrencyPolicy: "Forbid", successfulJobsHistoryLimit: 100 }, "5s"),
        ];
        for (const spec of specs) {
          spec.metadata.namespace = ns;
          await client.create(CronJob, spec);
        }
        // Sixty seconds of a two-second schedule: 30 runs.
        await waitFor(async () => (await laggedJobs("allow")).length >= 30, {
          timeoutMs: 180_000,
          intervalMs: 500,
          what: "30 runs of allow",
        });
        for (const name of ["allow", "forbid"]) {
          await client.patch(CronJob, name, { spec: { suspend: true } }, { namespace: ns });
        }
        const jobs = Object.fromEntries(
          await Promise.all(["allow", "forbid"].map(async (n) => [n, await laggedJobs(n)])),
        ) as Record<string, Job[]>;
        const times = (list: Job[]) =>
          list.map((j) => Date.parse(j.metadata.annotations![SCHEDULED_AT])).sort((a, b) => a - b);
        const allow = times(jobs.allow);
        const gaps = allow.slice(1).filter((t, i) => t - allow[i] !== 2_000);
        // Under Forbid, a Job starts only after the one before it finished.
        const forbid = [...jobs.forbid].sort((a, b) =>
          Date.parse(a.metadata.creationTimestamp!) - Date.parse(b.metadata.creationTimestamp!)
        );
        const overlaps = forbid.slice(1).filter((j, i) => {
          const done = forbid[i].status?.completionTime;
          return !done || Date.parse(j.metadata.creationTimestamp!) < Date.parse(done);
        });
        // Every request the operator made that the server refused as a duplicate or a conflict.
        const refused = await metric(/^rest_client_requests_total\{code="409"[^}]*\} (\S+)$/gm);
        const reconciles = await metric(
          /^controller_runtime_reconcile_total\{controller="cronjob"[^}]*\} (\S+)$/gm,
        );
        console.log(
          `lagged cronjob: allow ${allow.length} Jobs (${gaps.length} gaps), forbid ${forbid.length} Jobs (${overlaps.length} overlaps), ${refused} requests refused with 409, ${reconciles} reconciles, ${proxy.stats.delayedChunks} watch chunks delayed`,
        );
        assert.ok(proxy.stats.delayedWatches > 0, "the Job watch went through the delay");
        assert.equal(new Set(allow).size, allow.length, "one Job per scheduled time");
        assert.deepEqual(gaps, [], "no run missed after the first");
        assert.ok(forbid.length >= 3, `forbid ran (${forbid.length} Jobs)`);
        assert.deepEqual(
          overlaps.map((j) => j.metadata.name),
          [],
          "at most one active under Forbid",
        );
        assert.equal(refused, 0, "no create of a run that already has its Job, no conflict");
        for (const name of ["allow", "forbid"]) {
          await client.delete(CronJob, name, { namespace: ns });
        }
      } catch (err) {
        console.log(`lagged operator log:\n${lagged.logs().split("\n").slice(-60).join("\n")}`);
        throw err;
      } finally {
        await lagged.stop();
      }
    },
  );

  const operator = asDocumented(["run"], env);
  const logLines = operator.lines;

  try {
    // The sample, applied as the README says; its schedule is every minute, so its first Job
    // is awaited at the end, after the steps below.
    const sample = await cp.kubectl("apply", "-f", `${ROOT}examples/cronjob-sample.yaml`);
    assert.equal(sample.code, 0, sample.stderr);
    assert.equal(sample.stdout.trim(), "cronjob.batch.kubeno.dev/cronjob-sample created");

    await t.step(
      "a schedule creates Jobs on time; the history limit deletes old ones",
      async () => {
        await client.create(CronJob, cronJob("every2", { successfulJobsHistoryLimit: 2 }, "0s"));
        const seen = new Map<string, Job>();
        await waitFor(async () => {
          const jobs = await jobsOf("every2");
          for (const j of jobs) seen.set(j.metadata.name!, j);
          const done = jobs.filter(finished);
          return seen.size >= 5 && done.length <= 2 && jobs.length < seen.size && jobs;
        }, { timeoutMs: 120_000, intervalMs: 200, what: "5 runs of every2, old ones deleted" });
        const times = [...seen.values()].map((j) => {
          const at = Date.parse(j.metadata.annotations![SCHEDULED_AT]);
          assert.equal(at % 2_000, 0, `${j.metadata.name} is scheduled on the schedule`);
          assert.equal(j.metadata.name, `every2-${at / 1_000}`);
          assert.ok(
            Date.parse(j.metadata.creationTimestamp!) >= at - 1_000,
            `${j.metadata.name} was not created before its time`,
          );
          return at;
        }).sort((a, b) => a - b);
        assert.equal(new Set(times).size, times.length, "one Job per scheduled time");
        // The operator creates a Job, then records it in the status: wait for the status to
        // catch up with the newest Job seen, and for the history limit after the latest finish.
        await waitFor(async () => {
          const cron = await client.get(CronJob, "every2", { namespace: NS });
          return Date.parse(cron.status?.lastScheduleTime ?? "") >= times.at(-1)!;
        }, { timeoutMs: 60_000, what: "lastScheduleTime to reach the newest Job's time" });
        const remaining = await waitFor(async () => {
          const jobs = await jobsOf("every2");
          return jobs.filter(finished).length <= 2 && jobs;
        }, { timeoutMs: 60_000, what: "at most 2 successful Jobs kept" });
        console.log(
          `every2: ${seen.size} Jobs seen at ${
            times.map((t) => new Date(t).toISOString().slice(11, 19)).join(", ")
          }; ${remaining.length} kept`,
        );
      },
    );

    await t.step("failed Jobs beyond failedJobsHistoryLimit are deleted", async () => {
      // Pods that would run for an hour, in Jobs with a 1 s deadline: the Job controller marks
      // each Job Failed (DeadlineExceeded).
      const spec = cronJob("failing", { failedJobsHistoryLimit: 1 }, "1h");
      Object.assign(spec.spec.jobTemplate.spec!, { activeDeadlineSeconds: 1 });
      await client.create(CronJob, spec);
      const failedJob = (j: Job) =>
        j.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True");
      const seen = new Set<string>();
      const everFailed = new Set<string>();
      await waitFor(async () => {
        const jobs = await jobsOf("failing");
        for (const j of jobs) {
          seen.add(j.metadata.name!);
          if (failedJob(j)) everFailed.add(j.metadata.name!);
        }
        const failedNow = jobs.filter(failedJob).map((j) => j.metadata.name!);
        const deleted = [...everFailed].filter((n) => !jobs.some((j) => j.metadata.name === n));
        return everFailed.size >= 3 && failedNow.length <= 1 && deleted.length >= 2;
      }, {
        timeoutMs: 120_000,
        intervalMs: 200,
        what: "failed Jobs beyond the limit to be deleted",
      });
      await client.delete(CronJob, "failing", { namespace: NS });
      console.log(`failing: ${seen.size} Jobs seen, ${everFailed.size} failed, at most 1 kept`);
    });

    await t.step("Forbid skips a run while a Job is active", async () => {
      await client.create(CronJob, cronJob("forbid", { concurrencyPolicy: "Forbid" }, "1h"));
      try {
        await waitFor(async () => {
          const c = await client.get(CronJob, "forbid", { namespace: NS });
          return c.status?.active?.length === 1;
        }, { timeoutMs: 60_000, what: "forbid's first Job to be active" });
        const skips = /CronJob "?default\/forbid"? skips its run/;
        await waitFor(() => logLines(skips).length >= 2, {
          timeoutMs: 60_000,
          what: "two runs of forbid to be skipped",
        });
        const jobs = await jobsOf("forbid");
        assert.equal(jobs.length, 1, "no second Job while the first is active");
        assert.ok(!finished(jobs[0]), "the first Job is still running");
        assert.equal(await created("forbid"), 1);
      } catch (err) {
        // What the operator saw and did, to tell a cache that lost a Job from a Job that
        // finished or a create that was repeated.
        const jobs = (await jobsOf("forbid")).map((j) => ({
          name: j.metadata.name,
          created: j.metadata.creationTimestamp,
          uid: j.metadata.uid,
          deleting: j.metadata.deletionTimestamp,
          status: j.status,
        }));
        const events = (await client.list(Event, { namespace: NS })).items
          .filter((e) => e.involvedObject?.name?.startsWith("forbid"))
          .map((e) =>
            `${
              e.lastTimestamp ?? e.eventTime
            } ${e.involvedObject?.kind}/${e.involvedObject?.name} ${e.reason} x${
              e.series?.count ?? e.count ?? 1
            }: ${e.message}`
          );
        console.log(
          `forbid: Jobs ${JSON.stringify(jobs, null, 1)}\nEvents:\n${events.join("\n")}\n` +
            `operator log:\n${logLines(/forbid|Job|watch|[Ee]rror/).slice(-80).join("\n")}`,
        );
        throw err;
      }
    });

    await t.step("Replace replaces the active Job", async () => {
      await client.create(CronJob, cronJob("replace", { concurrencyPolicy: "Replace" }, "1h"));
      const first = await waitFor(async () => (await jobsOf("replace"))[0], {
        timeoutMs: 60_000,
        what: "replace's first Job",
      });
      await waitFor(async () => {
        const jobs = await jobsOf("replace");
        const gone = !jobs.some((j) =>
          j.metadata.uid === first.metadata.uid && !j.metadata.deletionTimestamp
        );
        return gone && jobs.some((j) => j.metadata.uid !== first.metadata.uid);
      }, { timeoutMs: 60_000, what: "the first Job to be replaced by a newer one" });
      assert.ok(logLines(/deleted Job "?replace-\d+"?: replaced/).length >= 1);
      const cron = await waitFor(async () => {
        const c = await client.get(CronJob, "replace", { namespace: NS });
        return c.status?.active?.length === 1 && c.status.active[0].uid !== first.metadata.uid &&
          c;
      }, { what: "status.active to name only the newest Job" });
      assert.equal(cron.status?.active?.length, 1);
    });

    await t.step("suspend stops scheduling", async () => {
      await client.patch(CronJob, "every2", { spec: { suspend: true } }, { namespace: NS });
      const suspendedAt = Date.now();
      const skips = /CronJob "?default\/every2"? is suspended; skipping its run/;
      await waitFor(() => logLines(skips).length >= 2, {
        timeoutMs: 60_000,
        what: "two runs of every2 to be skipped while suspended",
      });
      // A run due while the suspension was on its way to the operator's cache may still have
      // started (as with Kubernetes' own CronJob controller); none may from the first run the
      // operator skipped on.
      const firstSkipped = Date.parse(
        logLines(skips)[0].match(/skipping its run at \\?"?(\d{4}-[0-9T:.\-]+Z)/)![1],
      );
      assert.ok(firstSkipped > suspendedAt - 2_000, "the skipped run is one due after the suspend");
      const late = (await jobsOf("every2")).filter((j) =>
        Date.parse(j.metadata.annotations![SCHEDULED_AT]) >= firstSkipped
      );
      if (late.length) {
        // Which reconcile started the run, and which one said it skipped it.
        console.log(
          `suspended at ${new Date(suspendedAt).toISOString()}; operator log:\n${
            logLines(/every2/).slice(-12).join("\n")
          }`,
        );
      }
      assert.deepEqual(late.map((j) => j.metadata.name), [], "no run after the suspend");
    });

    await t.step("the README's sample (every minute) gets its Job", async () => {
      const jobs = await waitFor(async () => {
        const js = await jobsOf("cronjob-sample");
        return js.length > 0 ? js : undefined;
      }, { timeoutMs: 120_000, intervalMs: 1_000, what: "the first Job of cronjob-sample" });
      const sample = await client.get(CronJob, "cronjob-sample", { namespace: NS });
      assert.equal(sample.spec.startingDeadlineSeconds, 60);
      // A minute boundary, as "*/1 * * * *" schedules.
      assert.match(jobs[0].metadata.annotations![SCHEDULED_AT], /T\d\d:\d\d:00(\.000)?Z$/);
      assert.equal(jobs[0].spec?.template.spec?.containers[0].image, "busybox:1.36");
    });

    await t.step("deleting a CronJob garbage-collects its Jobs", async () => {
      for (const name of ["every2", "forbid", "replace"]) {
        await client.delete(CronJob, name, { namespace: NS });
      }
      await waitFor(async () => {
        const left = await Promise.all(["every2", "forbid", "replace"].map(jobsOf));
        return left.every((l) => l.length === 0);
      }, { timeoutMs: 90_000, intervalMs: 250, what: "the Jobs to be garbage-collected" });
      for (const name of ["every2", "forbid", "replace"]) {
        const err = await client.get(CronJob, name, { namespace: NS }).catch((e) => e);
        assert.ok(isNotFound(err));
      }
    });

    await t.step("SIGTERM: the operator drains and exits 0", async () => {
      const status = await operator.stop("SIGTERM");
      const tail = operator.logs().split("\n").slice(-30).join("\n");
      assert.equal(status.code, 0, `exit ${status.code}; logs:\n${tail}`);
    });
  } finally {
    await operator.stop("SIGKILL");
  }
});
