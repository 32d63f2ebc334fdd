//go:build tools

// Package tools keeps the local cluster's S3-compatible object store (Versity's gateway over a directory) in the
// module graph.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
