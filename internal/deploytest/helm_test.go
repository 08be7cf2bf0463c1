package deploytest

import (
	"bytes"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The Helm chart cannot be rendered here (Helm is not a dependency of the
// collector's module; deploy/helm/test renders it with Helm's engine and
// compares it with the kustomize base). What needs the collector's own code
// is checked here: the chart's config loads with config.Load.

const chartDir = "deploy/helm/collector"

func TestHelmChartAlertsAreDeployPrometheusAlerts(t *testing.T) {
	if !bytes.Equal(read(t, chartDir+"/files/alerts.yaml"), read(t, "deploy/prometheus/alerts.yaml")) {
		t.Errorf("%s/files/alerts.yaml differs from deploy/prometheus/alerts.yaml, the rules Prometheus and Compose load: "+
			"cp deploy/prometheus/alerts.yaml %s/files/alerts.yaml", chartDir, chartDir)
	}
}

// chartValues returns the chart's values.yaml.
func chartValues(t *testing.T) map[string]any {
	t.Helper()
	return yamlDoc(t, chartDir+"/values.yaml")
}

// helmMerge merges over into base as Helm merges user values over a chart's
// values.yaml: maps key by key, anything else replaced, null deletes.
func helmMerge(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if v == nil {
			delete(out, k)
			continue
		}
		bm, bok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			out[k] = helmMerge(bm, om)
			continue
		}
		out[k] = v
	}
	return out
}

// loadChartConfig loads the chart's config (values.yaml's, with over merged
// in as Helm would) with the collector's loader, the chart's Secret keys as
// the environment, and checks what the chart's pod relies on.
func loadChartConfig(t *testing.T, name string, over map[string]any, env map[string]string) {
	t.Helper()
	vals := chartValues(t)
	cfgMap, _ := vals["config"].(map[string]any)
	if cfgMap == nil {
		t.Fatalf("%s/values.yaml has no config map", chartDir)
	}
	text, err := yaml.Marshal(helmMerge(cfgMap, over))
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, name, text, env)

	// The chart's pod is the kustomize base's (deploy/helm/test compares
	// them): the same volume, port and grace period constraints hold.
	b := loadK8s(t)
	dataMount := ""
	for _, vm := range list(b.container, "volumeMounts") {
		if str(vm, "name") == "data" {
			dataMount = str(vm, "mountPath")
		}
	}
	if dataMount == "" || !underDir(cfg.Checkpoint.Path, dataMount) {
		t.Errorf("%s: checkpoint.path %s is not on the volume (%s)", name, cfg.Checkpoint.Path, dataMount)
	}
	if cfg.Sink.Type == "file" && !underDir(cfg.Sink.File.Dir, dataMount) {
		t.Errorf("%s: sink.file.dir %s is not on the volume (%s)", name, cfg.Sink.File.Dir, dataMount)
	}
	host, port, _ := net.SplitHostPort(cfg.Metrics.Listen)
	if host != "0.0.0.0" || port != str(list(b.container, "ports")[0], "containerPort") {
		t.Errorf("%s: metrics.listen %s, the chart's probes and Service use 0.0.0.0:%s", name, cfg.Metrics.Listen, str(list(b.container, "ports")[0], "containerPort"))
	}
	grace, _ := vals["terminationGracePeriodSeconds"].(int)
	if need := 2*cfg.Pipeline.StopTimeout + 5*time.Second; time.Duration(grace)*time.Second <= need {
		t.Errorf("%s: terminationGracePeriodSeconds %d must exceed 2 x pipeline.stop_timeout (%s) + 5s = %s", name, grace, cfg.Pipeline.StopTimeout, need)
	}
}

func TestHelmChartDefaultConfigLoads(t *testing.T) {
	// The default needs only the API secret (NOTES.txt: api-secret always),
	// which the chart gives as a file of its Secret volume
	// (deploy/helm/test checks the rendering).
	loadChartConfig(t, chartDir+"/values.yaml config", nil, map[string]string{"COLLECTOR_API__SECRET_FILE": "/etc/collector-credentials/api-secret"})
}

func TestHelmChartWithTheKustomizeConfigLoads(t *testing.T) {
	// deploy/kubernetes/collector.yaml as the chart's config, merged over
	// the chart's default as Helm merges (deploy/helm/test renders it so),
	// with every Secret key the pod reads.
	over := yamlDoc(t, k8sDir+"/collector.yaml")
	loadChartConfig(t, "deploy/kubernetes/collector.yaml over the chart's config", over, k8sEnv(t, loadK8s(t)))
}

// docHelmValues returns the values file the Helm section of docs/kubernetes.md shows.
func docHelmValues(t *testing.T) map[string]any {
	t.Helper()
	sec := docSection(t, "docs/kubernetes.md", "## Helm")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("docs/kubernetes.md, Helm: no values example (```yaml block)")
	}
	return yamlDocs(t, "docs/kubernetes.md Helm values", []byte(m[1]))[0]
}

func TestHelmReadmeExampleConfigLoads(t *testing.T) {
	over, _ := docHelmValues(t)["config"].(map[string]any)
	if over == nil {
		t.Fatal("docs/kubernetes.md, Helm: the values example sets no config")
	}
	loadChartConfig(t, "docs/kubernetes.md's Helm values over the chart's config", over, k8sEnv(t, loadK8s(t)))
}

func TestHelmChartResourcesLeaveRoomForTheGoHeap(t *testing.T) {
	vals := chartValues(t)
	limit := quantity(t, str(vals, "resources.limits.memory"))
	if gl := quantity(t, strings.TrimSuffix(str(vals, "goMemLimit"), "B")); gl >= limit {
		t.Errorf("values.yaml: goMemLimit %s is not below resources.limits.memory %s", str(vals, "goMemLimit"), str(vals, "resources.limits.memory"))
	}
	if r := quantity(t, str(vals, "resources.requests.memory")); r > limit {
		t.Errorf("values.yaml: memory request %d > limit %d", r, limit)
	}
}

func TestHelmValuesAreDocumentedKeyByKey(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(read(t, chartDir+"/values.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	top := doc.Content[0]
	documented := func(k, v *yaml.Node) bool {
		return strings.TrimSpace(k.HeadComment+k.LineComment+v.LineComment) != ""
	}
	// The chart's own structured values (helmStructured): each of their
	// keys is explained.
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if !documented(k, v) {
			t.Errorf("%s/values.yaml: %s has no comment", chartDir, k.Value)
		}
		if helmStructured[k.Value] {
			for j := 0; j+1 < len(v.Content); j += 2 {
				if !documented(v.Content[j], v.Content[j+1]) {
					t.Errorf("%s/values.yaml: %s.%s has no comment", chartDir, k.Value, v.Content[j].Value)
				}
			}
		}
	}
	// One release, one collector, one credential.
	if !strings.Contains(string(read(t, chartDir+"/values.yaml")), "ONE RELEASE = ONE COLLECTOR = ONE CREDENTIAL") {
		t.Errorf("%s/values.yaml does not say one release = one collector = one credential", chartDir)
	}
}
