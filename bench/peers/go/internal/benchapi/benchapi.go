// Package benchapi holds what the Go peers share: the Bench custom resource's Go types
// (hand-written as kubebuilder would generate them), client configuration with client-side
// rate limiting off, and the reconcile-start log used by the event-latency scenario.
package benchapi

import (
	"bufio"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The benchmark's custom resource: benches.bench.kubeno.dev, created by the harness.
const (
	Group     = "bench.kubeno.dev"
	Version   = "v1alpha1"
	Kind      = "Bench"
	Resource  = "benches"
	Finalizer = "bench.kubeno.dev/cleanup"
	// FieldManager is the server-side apply field manager every contender uses.
	FieldManager = "bench-operator"
)

// GroupVersion of the Bench resource.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// BenchSpec is the desired state: the value copied into the owned ConfigMap.
type BenchSpec struct {
	Value string `json:"value,omitempty"`
}

// BenchStatus records the generation the operator last converged.
type BenchStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Bench is the benchmark's custom resource.
type Bench struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BenchSpec   `json:"spec,omitempty"`
	Status            BenchStatus `json:"status,omitempty"`
}

// BenchList is a list of Bench.
type BenchList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bench `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (b *Bench) DeepCopyObject() runtime.Object { return b.DeepCopy() }

// DeepCopy copies the object.
func (b *Bench) DeepCopy() *Bench {
	if b == nil {
		return nil
	}
	out := new(Bench)
	*out = *b
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *BenchList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(BenchList)
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Bench, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}

// AddToScheme registers Bench and BenchList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Bench{}, &BenchList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// RestConfig loads a kubeconfig with client-side rate limiting off (QPS < 0 means no limiter
// in client-go; controller-runtime keeps a negative QPS as is).
func RestConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	cfg.Burst = 1 << 20
	return cfg, nil
}

// StartLog records reconcile starts and informer events in memory (kind, name, generation,
// wall-clock ms since the epoch) and writes them to a file at exit, so logging costs
// nothing measurable.
type StartLog struct {
	mu      sync.Mutex
	enabled bool
	lines   []string
}

// NewStartLog returns a log that records only when path is not empty.
func NewStartLog(path string) *StartLog { return &StartLog{enabled: path != ""} }

// Record notes that something of kind ("R" reconcile start, "U" the converge work's start once
// the finalizer is on, "E" informer update event)
// happened to name at generation gen now.
func (l *StartLog) Record(kind string, name string, gen int64) {
	if !l.enabled {
		return
	}
	ms := float64(time.Now().UnixMicro()) / 1000
	line := kind + " " + name + " " + strconv.FormatInt(gen, 10) + " " + strconv.FormatFloat(ms, 'f', 3, 64)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// WriteTo writes the recorded lines to path, one per line.
func (l *StartLog) WriteTo(path string) error {
	if path == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return os.WriteFile(path, []byte(strings.Join(l.lines, "\n")+"\n"), 0o644)
}

// RSSKiB forces a garbage collection, returns freed memory to the OS and reads VmRSS.
func RSSKiB() int64 {
	goruntime.GC()
	debug.FreeOSMemory()
	return statusKiB("VmRSS:")
}

// HeapBytes forces a garbage collection and returns the bytes of live heap objects.
func HeapBytes() int64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func statusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), field) {
			var v int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(s.Text(), field)), "%d", &v)
			return v
		}
	}
	return -1
}
