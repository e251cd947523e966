// The client-go side of bench/scale.ts's watcher-memory comparison: one SharedInformerFactory with
// informers for Pods, Deployments and Services in every namespace (what a Go controller for these
// kinds would start), synced, then its own RSS measured from /proc/self/status before and after a GC.
// Prints one JSON line on stdout. Usage: informer -kubeconfig PATH [-strip-managed-fields]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type sample struct {
	Variant     string  `json:"variant"`
	Objects     int     `json:"objects"`
	RssStartMiB float64 `json:"rssStartMiB"`
	RssSyncMiB  float64 `json:"rssSyncMiB"`
	RssGcMiB    float64 `json:"rssGcMiB"`
	HeapMiB     float64 `json:"heapMiB"`
	SyncMs      int64   `json:"syncMs"`
}

// rssMiB reads VmRSS (kB) from /proc/self/status: the same number the Node side reads.
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "VmRSS:") {
			kb, err := strconv.ParseFloat(strings.Fields(line)[1], 64)
			if err != nil {
				panic(err)
			}
			return kb / 1024
		}
	}
	panic("no VmRSS in /proc/self/status")
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// stripManagedFields drops managedFields before an object is stored. Its untyped signature is client-go's
// cache.TransformFunc, which the informer requires; the object is narrowed to its metadata at once, and
// anything without metadata of its own (a DeletedFinalStateUnknown tombstone) is stored unchanged.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = stripManagedFields

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	strip := flag.Bool("strip-managed-fields", false, "drop managedFields with a transform before objects are stored (what controller-runtime users opt into)")
	flag.Parse()
	start := rssMiB()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		panic(err)
	}
	// Not throttled by client-go's default 5 QPS: the Node side is not either.
	cfg.QPS, cfg.Burst = 1000, 1000
	client := kubernetes.NewForConfigOrDie(cfg)
	opts := []informers.SharedInformerOption{}
	variant := "client-go"
	if *strip {
		variant = "client-go-stripped"
		opts = append(opts, informers.WithTransform(stripManagedFields))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	pods := factory.Core().V1().Pods().Informer()
	services := factory.Core().V1().Services().Informer()
	deployments := factory.Apps().V1().Deployments().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, services.HasSynced, deployments.HasSynced) {
		panic("informers did not sync")
	}
	syncMs := time.Since(t0).Milliseconds()
	synced := rssMiB()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := sample{
		Variant:     variant,
		Objects:     len(pods.GetStore().ListKeys()) + len(services.GetStore().ListKeys()) + len(deployments.GetStore().ListKeys()),
		RssStartMiB: round1(start),
		RssSyncMiB:  round1(synced),
		RssGcMiB:    round1(rssMiB()),
		HeapMiB:     round1(float64(ms.HeapAlloc) / 1024 / 1024),
		SyncMs:      syncMs,
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
}
