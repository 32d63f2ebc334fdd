//go:build tools

// Package tools keeps the promtool command in the module graph.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
