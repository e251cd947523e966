//go:build tools

// Package tools keeps CoreDNS's main package in this module's graph, so `go mod tidy` records every module it
// needs in go.sum and `go build` finds them with the graph pinned here.
package tools

import _ "github.com/coredns/coredns"
