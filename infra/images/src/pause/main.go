// Command pause holds a pod sandbox's namespaces open, as Kubernetes' pause image does: it does nothing
// until the runtime stops the sandbox with SIGTERM or SIGINT. The real node builds it because no image
// can be pulled here (registry.k8s.io is out of reach).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
