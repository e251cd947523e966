//go:build tools

// Package tools keeps KEDA's two main packages in this module's graph, so `go mod tidy` records every module
// they need in go.sum and `go build` finds them with the module graph pinned here.
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
