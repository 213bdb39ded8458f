// limit is the benchmark's lower bound: the converge writes of cr-operator with the same
// concurrency and no framework. One list of the Bench objects, then 4 goroutines, each
// taking the next object and doing its three writes: merge-patch the finalizer in,
// server-side apply the owned ConfigMap, merge-patch status.observedGeneration.
//
//	limit -kubeconfig FILE -namespace NS [-workers 4]
//
// Prints {"done":N} when finished, then waits for SIGTERM so the harness can read its
// CPU time and peak RSS.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kubeno.dev/bench/peers/internal/benchapi"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "default", "namespace of the Bench objects")
	workers := flag.Int("workers", 4, "concurrent goroutines")
	flag.Parse()

	cfg, err := benchapi.RestConfig(*kubeconfig)
	check(err)
	core, err := kubernetes.NewForConfig(cfg)
	check(err)
	dyn, err := dynamic.NewForConfig(cfg)
	check(err)
	benches := dyn.Resource(benchapi.GroupVersion.WithResource(benchapi.Resource)).Namespace(*namespace)
	ctx := context.Background()

	list, err := benches.List(ctx, metav1.ListOptions{})
	check(err)

	next := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				if err := converge(ctx, core, benches, b); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := range list.Items {
		next <- &list.Items[i]
	}
	close(next)
	wg.Wait()
	check(failed)
	fmt.Printf("{\"done\":%d}\n", len(list.Items))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

func converge(
	ctx context.Context,
	core *kubernetes.Clientset,
	benches dynamic.ResourceInterface,
	b *unstructured.Unstructured,
) error {
	name, ns := b.GetName(), b.GetNamespace()
	// With resourceVersion (optimistic lock), as kubeno's and controller-runtime's.
	finalizerPatch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      append(b.GetFinalizers(), benchapi.Finalizer),
		"resourceVersion": b.GetResourceVersion(),
	}})
	if _, err := benches.Patch(ctx, name, types.MergePatchType, finalizerPatch, metav1.PatchOptions{}); err != nil {
		return err
	}
	value, _, _ := unstructured.NestedString(b.Object, "spec", "value")
	cm := corev1ac.ConfigMap(name, ns).
		WithData(map[string]string{"value": value}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(benchapi.GroupVersion.String()).
			WithKind(benchapi.Kind).
			WithName(name).
			WithUID(b.GetUID()).
			WithController(true).
			WithBlockOwnerDeletion(true))
	if _, err := core.CoreV1().ConfigMaps(ns).Apply(ctx, cm, metav1.ApplyOptions{
		FieldManager: benchapi.FieldManager,
		Force:        true,
	}); err != nil {
		return err
	}
	status, _ := json.Marshal(map[string]any{
		"status": map[string]any{"observedGeneration": b.GetGeneration()},
	})
	_, err := benches.Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{}, "status")
	return err
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "limit:", err)
		os.Exit(1)
	}
}
