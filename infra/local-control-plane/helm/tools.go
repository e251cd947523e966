//go:build tools

// Package tools records the one main package this wrapper module exists to build, so `go mod tidy`
// keeps its dependencies in go.sum.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
