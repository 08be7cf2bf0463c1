// Package helmtest renders the Helm chart (deploy/helm/collector) with
// Helm's own engine and builds the kustomize base (deploy/kubernetes) with
// kustomize's krusty, decodes every object strictly into the Kubernetes (and
// Prometheus Operator) Go types, and checks that the two deploy the same
// pod. It also parses every alert rule and dashboard query with Prometheus's
// PromQL parser. It is a module of its own so that Helm, kustomize,
// client-go and Prometheus stay out of the collector's go.mod;
// scripts/test.sh runs it.
//
// It cannot import the collector's internal packages (another module): the
// collector's own loader checks the chart's default config in
// internal/deploytest. Here, the rendered config's keys are compared with
// configs/collector.yaml, which names every key the code knows.
//
//	cd deploy/helm/test && go test -count=1 ./...
//	RENDER=default go test -count=1 -run TestPrintRendering   # print a rendering
//	RENDER=/path/to/values.yaml go test -count=1 -run TestPrintRendering
//
// Nothing needs a cluster, a helm or kubectl binary, or the network (once
// the modules are downloaded).
package helmtest
