// cr-operator is the benchmark's operator written with controller-runtime, the way a
// kubebuilder user would: for each Bench, add a finalizer, server-side apply one owned
// ConfigMap (controller ownerReference) and patch status.observedGeneration.
//
//	cr-operator -kubeconfig FILE [-workers 4] [-starts FILE]
//
// Prints "ready" once its caches are synced; runs until SIGTERM; at exit prints
// {"reconciles":N}, the sum of its controller_runtime_reconcile_total; with -starts, writes
// the log of reconcile starts ("R name generation epoch-ms") and Bench update events
// reaching the cache ("E ...") to FILE at exit.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"kubeno.dev/bench/peers/internal/benchapi"
)

type reconciler struct {
	client.Client
	starts *benchapi.StartLog
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b benchapi.Bench
	if err := r.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.starts.Record("R", b.Name, b.Generation)

	if !b.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&b, benchapi.Finalizer) {
			patch := client.MergeFrom(b.DeepCopy())
			controllerutil.RemoveFinalizer(&b, benchapi.Finalizer)
			return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, &b, patch))
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(&b, benchapi.Finalizer) {
		// With resourceVersion, as kubeno's finalizer patch.
		patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(&b, benchapi.Finalizer)
		if err := r.Patch(ctx, &b, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Where kubeno's reconcile function starts: the finalizer is on, the converge work begins.
	r.starts.Record("U", b.Name, b.Generation)

	cm := corev1ac.ConfigMap(b.Name, b.Namespace).
		WithData(map[string]string{"value": b.Spec.Value}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(benchapi.GroupVersion.String()).
			WithKind(benchapi.Kind).
			WithName(b.Name).
			WithUID(b.UID).
			WithController(true).
			WithBlockOwnerDeletion(true))
	if err := r.Apply(ctx, cm, client.FieldOwner(benchapi.FieldManager), client.ForceOwnership); err != nil {
		return ctrl.Result{}, err
	}

	if b.Status.ObservedGeneration != b.Generation {
		patch := client.MergeFrom(b.DeepCopy())
		b.Status.ObservedGeneration = b.Generation
		if err := r.Status().Patch(ctx, &b, patch); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func main() {
	// controller-runtime registers -kubeconfig on the default flag set itself.
	workers := flag.Int("workers", 4, "concurrent reconciles")
	startsPath := flag.String("starts", "", "write the reconcile-start log here at exit")
	flag.Parse()
	log.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))

	cfg, err := benchapi.RestConfig(flag.Lookup("kubeconfig").Value.String())
	check(err)
	scheme := runtime.NewScheme()
	check(clientgoscheme.AddToScheme(scheme))
	check(benchapi.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// Same cached data as kubeno, whose informers strip managedFields by default.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	check(err)
	r := &reconciler{Client: mgr.GetClient(), starts: benchapi.NewStartLog(*startsPath)}
	check(ctrl.NewControllerManagedBy(mgr).
		For(&benchapi.Bench{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(r))

	ctx := ctrl.SetupSignalHandler()
	// Register both informers now so that "ready" means both are synced.
	benches, err := mgr.GetCache().GetInformer(ctx, &benchapi.Bench{})
	check(err)
	if *startsPath != "" {
		// When the watch event reaches the cache, to split the latency in two.
		_, err = benches.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) {
				b := obj.(*benchapi.Bench)
				r.starts.Record("E", b.Name, b.Generation)
			},
		})
		check(err)
	}
	configMaps, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	check(err)
	go func() {
		// Poll every 100 µs: WaitForCacheSync polls every 100 ms, too coarse to time.
		for !benches.HasSynced() || !configMaps.HasSynced() {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		fmt.Println("ready")
	}()
	check(mgr.Start(ctx))
	check(r.starts.WriteTo(*startsPath))
	reconciles, err := reconcileTotal()
	check(err)
	fmt.Printf("{\"reconciles\":%d}\n", reconciles)
}

// reconcileTotal sums controller_runtime_reconcile_total over its results, from the registry
// controller-runtime records into whether or not a metrics server serves it.
func reconcileTotal() (int64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return int64(total), nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "cr-operator:", err)
		os.Exit(1)
	}
}
