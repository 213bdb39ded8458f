// informer-sync measures client-go's shared informer: time from start to synced over the
// ConfigMaps of one namespace, and resident memory after sync minus before (both read from
// /proc/self/status VmRSS after a forced GC that returns freed memory to the OS), and the
// live heap (runtime.MemStats.HeapAlloc) after minus before.
//
//	informer-sync -kubeconfig FILE -namespace NS [-json]
//
// By default client-go asks for protobuf, which the API server speaks for built-in kinds
// only; -json makes it ask for JSON, the one encoding kubeno (and every client of a custom
// resource) reads, so the two informers can be compared on the same wire format.
// KUBE_FEATURE_WatchListClient=false makes client-go list in pages instead of streaming a
// watch-list.
//
// Prints one JSON line, then waits for SIGTERM so the harness can read peak RSS.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"kubeno.dev/bench/peers/internal/benchapi"
)

// stripManagedFields is what kubeno's informer does by default (and what controller-runtime
// offers as cache.TransformStripManagedFields).
func stripManagedFields(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	return in, nil
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "default", "namespace of the ConfigMaps")
	asJSON := flag.Bool("json", false, "ask for JSON instead of protobuf")
	flag.Parse()

	cfg, err := benchapi.RestConfig(*kubeconfig)
	check(err)
	if *asJSON {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	core, err := kubernetes.NewForConfig(cfg)
	check(err)
	before, heapBefore := benchapi.RSSKiB(), benchapi.HeapBytes()

	factory := informers.NewSharedInformerFactoryWithOptions(core, 0, informers.WithNamespace(*namespace))
	inf := factory.Core().V1().ConfigMaps().Informer()
	check(inf.SetTransform(stripManagedFields))
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	factory.Start(ctx.Done())
	// Poll every 100 µs: cache.WaitForCacheSync polls every 100 ms, too coarse to time.
	for !inf.HasSynced() {
		time.Sleep(100 * time.Microsecond)
	}
	syncMs := float64(time.Since(start).Microseconds()) / 1000
	count := len(inf.GetStore().ListKeys())
	after, heapAfter := benchapi.RSSKiB(), benchapi.HeapBytes()

	out, _ := json.Marshal(map[string]any{
		"objects":            count,
		"syncMs":             syncMs,
		"rssBeforeKiB":       before,
		"rssAfterKiB":        after,
		"bytesPerObject":     float64(after-before) * 1024 / float64(max(count, 1)),
		"heapBytesPerObject": float64(heapAfter-heapBefore) / float64(max(count, 1)),
		"watchListClient":    clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
		"contentType":        cfg.ContentType,
	})
	fmt.Println(string(out))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	cancel()
	// Keep the store reachable until the end so the measurement above is not flattered.
	_ = inf.GetStore().ListKeys()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer-sync:", err)
		os.Exit(1)
	}
}
