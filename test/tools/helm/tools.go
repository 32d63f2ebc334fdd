//go:build tools

// Package tools keeps the helm command in the module graph: the tests lint, render, install and upgrade the chart
// in dist/helm/ with it.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
