// Command stages prints the default KWOK Stages (node initialize, node heartbeat with lease, pod ready,
// complete and delete) that kwok v0.8.0 ships embedded, as one multi-document YAML for `kwok --config`.
// kwokctl hands these to kwok itself; Ripple runs kwok directly, so it must hand them over too.
package main

import (
	"fmt"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	for _, doc := range []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	} {
		fmt.Println("---")
		fmt.Print(doc)
	}
}
