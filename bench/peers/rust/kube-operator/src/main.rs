//! kube-operator is the benchmark's operator written with kube-rs, the way a kube-rs user
//! would: for each Bench, add a finalizer, server-side apply one owned ConfigMap (controller
//! ownerReference) and patch status.observedGeneration.
//!
//!     kube-operator --kubeconfig FILE [--workers 4]
//!
//! Prints "ready" once both caches are synced; runs until SIGTERM. Like the other contenders
//! it strips managedFields before objects enter its caches (kube-rs's documented `modify`).
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    api::{Api, ObjectMeta, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{
        controller::{Action, Config as ControllerConfig, Controller},
        reflector, watcher, WatchStreamExt,
    },
    Client, Config, CustomResource, Resource, ResourceExt,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const FINALIZER: &str = "bench.kubeno.dev/cleanup";
const FIELD_MANAGER: &str = "bench-operator";

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "bench.kubeno.dev",
    version = "v1alpha1",
    kind = "Bench",
    namespaced,
    status = "BenchStatus"
)]
pub struct BenchSpec {
    #[serde(default)]
    pub value: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BenchStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
}

struct Ctx {
    client: Client,
}

async fn reconcile(b: Arc<Bench>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let ns = b.namespace().unwrap_or_default();
    let name = b.name_any();
    let benches: Api<Bench> = Api::namespaced(ctx.client.clone(), &ns);
    let finalizers = b.finalizers();
    if b.meta().deletion_timestamp.is_some() {
        if finalizers.iter().any(|f| f == FINALIZER) {
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
            let patch = serde_json::json!({ "metadata": { "finalizers": rest } });
            match benches.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(Action::await_change());
    }
    if !finalizers.iter().any(|f| f == FINALIZER) {
        // With resourceVersion (an optimistic lock), as every contender's finalizer patch.
        let mut all = finalizers.to_vec();
        all.push(FINALIZER.to_string());
        let patch = serde_json::json!({
            "metadata": { "finalizers": all, "resourceVersion": b.resource_version() }
        });
        benches.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }

    let owner = OwnerReference {
        api_version: Bench::api_version(&()).to_string(),
        kind: Bench::kind(&()).to_string(),
        name: name.clone(),
        uid: b.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some([("value".to_string(), b.spec.value.clone())].into()),
        ..Default::default()
    };
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let ssa = PatchParams::apply(FIELD_MANAGER).force();
    let mut cm_obj = serde_json::to_value(&cm).expect("ConfigMap serializes");
    cm_obj["apiVersion"] = "v1".into();
    cm_obj["kind"] = "ConfigMap".into();
    cms.patch(&name, &ssa, &Patch::Apply(&cm_obj)).await?;

    let generation = b.meta().generation;
    if b.status.as_ref().and_then(|s| s.observed_generation) != generation {
        let patch = serde_json::json!({ "status": { "observedGeneration": generation } });
        match benches.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Action::await_change())
}

fn error_policy(_b: Arc<Bench>, _err: &Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(500))
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    let kubeconfig = arg("--kubeconfig").expect("--kubeconfig FILE");
    let workers: u16 = arg("--workers").map(|w| w.parse().expect("--workers N")).unwrap_or(4);
    let kc = Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig context");
    let client = Client::try_from(config).expect("client");

    // Both kinds in all namespaces, managedFields stripped before they are cached.
    let benches: Api<Bench> = Api::all(client.clone());
    let cms: Api<ConfigMap> = Api::all(client.clone());
    let (bench_reader, bench_writer) = reflector::store();
    let (cm_reader, cm_writer) = reflector::store();
    // "ready" once both stores hold their initial lists. Store::wait_until_ready cannot be
    // used beside the controller: its DelayedInit wakes only the last of several waiters, and
    // the controller waits on the same store.
    let (synced_tx, mut synced_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let bench_synced = synced_tx.clone();
    let bench_stream = watcher(benches, watcher::Config::default())
        .default_backoff()
        .modify(|b: &mut Bench| b.managed_fields_mut().clear())
        .reflect(bench_writer)
        .inspect(move |e| {
            if matches!(e, Ok(watcher::Event::InitDone)) {
                let _ = bench_synced.send(0);
            }
        })
        .applied_objects();
    let cm_stream = watcher(cms, watcher::Config::default())
        .default_backoff()
        .modify(|c: &mut ConfigMap| c.managed_fields_mut().clear())
        .reflect(cm_writer)
        .inspect(move |e| {
            if matches!(e, Ok(watcher::Event::InitDone)) {
                let _ = synced_tx.send(1);
            }
        })
        .touched_objects();

    let ready = tokio::spawn(async move {
        // Relists send InitDone again; the first of each stream counts.
        let mut seen = [false, false];
        while !seen.iter().all(|s| *s) {
            match synced_rx.recv().await {
                Some(i) => seen[i] = true,
                None => return,
            }
        }
        println!("ready");
    });
    let controller = Controller::for_stream(bench_stream, bench_reader)
        .owns_stream(cm_stream)
        .with_config(ControllerConfig::default().concurrency(workers))
        .graceful_shutdown_on(async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("SIGTERM handler");
            term.recv().await;
        })
        .run(reconcile, error_policy, Arc::new(Ctx { client }))
        .for_each(|_| futures::future::ready(()));
    controller.await;
    ready.abort();
    drop(cm_reader);
}
