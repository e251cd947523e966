// Command stages prints the KWOK Stages the sandbox runs, as one multi-document YAML for `kwok --config`.
// kwokctl hands kwok its stages itself; Ripple runs kwok directly, so it must hand them over too.
//
// Nodes, and Pods without readiness gates, get kwok v0.8.0's embedded defaults unchanged (node initialize,
// node heartbeat with lease, pod ready, complete, delete): such a Pod is Running and Ready at once.
//
// Pods with readiness gates get two stages of Ripple's own (gates.go) instead of the default pod-ready, which
// would fake every gate condition True and never look at them again. With them a gated Pod behaves as on a
// real kubelet: its Ready condition is ContainersReady and every readiness-gate condition True, recomputed
// whenever someone writes a gate condition, so the EndpointSlice controller drops and re-adds the Pod.
package main

import (
	"fmt"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/yaml"
)

// withoutReadinessGates narrows a Pod stage to Pods whose spec has no readiness gates, leaving the rest of it
// exactly as kwok ships it.
func withoutReadinessGates(doc string) string {
	var stage map[string]any
	if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
		panic(fmt.Sprintf("parse the embedded stage: %v", err))
	}
	spec, ok := stage["spec"].(map[string]any)
	if !ok {
		panic("embedded stage has no spec")
	}
	selector, ok := spec["selector"].(map[string]any)
	if !ok {
		panic("embedded stage has no selector")
	}
	exprs, _ := selector["matchExpressions"].([]any)
	selector["matchExpressions"] = append(exprs, map[string]any{
		"key":      ".spec.readinessGates.[].conditionType",
		"operator": "DoesNotExist",
	})
	out, err := yaml.Marshal(stage)
	if err != nil {
		panic(fmt.Sprintf("write the stage: %v", err))
	}
	return string(out)
}

func main() {
	for _, doc := range []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		withoutReadinessGates(podfast.DefaultPodReady),
		podReadyWithGates,
		podReadinessGates,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	} {
		fmt.Println("---")
		fmt.Print(doc)
	}
}
