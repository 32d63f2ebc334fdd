//go:build tools

// Package tools keeps the default StorageClass's dynamic provisioner in the module graph.
package tools

import _ "github.com/rancher/local-path-provisioner"
