// Command coredns is CoreDNS with only the plugins a local cluster's DNS needs: names of Services and Pods from
// the apiserver, and no upstream resolver (the cluster reaches no network but its own). Upstream's full plugin set
// would pull every cloud provider's SDK into the build.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
