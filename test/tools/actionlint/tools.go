//go:build tools

// Package tools keeps the actionlint command in the module graph.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
