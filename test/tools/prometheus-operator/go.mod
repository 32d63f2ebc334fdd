// Not a tool: pins the Prometheus Operator's module, whose example/prometheus-operator-crd/ holds its CRDs. The tests
// install its PodMonitor CRD from there (test/support/prometheus-operator.ts), so PodMonitors are checked against
// the real schema.
module keelson.dev/test/tools/prometheus-operator

go 1.26.7

require github.com/prometheus-operator/prometheus-operator v0.85.0
