//go:build tools

// Package tools keeps the real node's container runtime in the module graph: containerd, its runc shim and ctr
// (to import images).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
