//go:build tools

// Package tools keeps the alertmanager command in the module graph.
package tools

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
