//go:build tools

// Package tools keeps runc in the module graph, apart from containerd: containerd's newer runtime-spec does not
// build with runc's release.
package tools

import _ "github.com/opencontainers/runc"
