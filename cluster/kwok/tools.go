//go:build tools

// Package tools keeps the kwok command in the module graph.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
