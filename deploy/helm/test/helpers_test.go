package helmtest

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// root returns the repository's top directory (three levels above this
// package).
func root(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd", "collector")); err != nil {
		t.Fatalf("%s is not the collector's repository: %v", dir, err)
	}
	return dir
}

func read(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// objects are the decoded objects of one rendering or build, by kind. Each
// kind appears at most once (one release, one collector).
type objects struct {
	sts    *appsv1.StatefulSet
	svc    *corev1.Service
	cm     *corev1.ConfigMap
	secret *corev1.Secret
	sm     *monitoringv1.ServiceMonitor
	rule   *monitoringv1.PrometheusRule
	pdb    *policyv1.PodDisruptionBudget
	netpol *networkingv1.NetworkPolicy
	// The Grafana dashboard's ConfigMap (the one with key collector.json).
	dashboard *corev1.ConfigMap
	testPod   *corev1.Pod            // the helm test hook
	sa        *corev1.ServiceAccount // the pod's, when the chart creates it
	kinds     []string               // every kind, in order
}

// decodeAll decodes a stream of YAML documents strictly: each must be one of
// the kinds the collector deploys, and a field the Go type does not know (a
// typo, a misplaced key, a wrong indentation) is an error, as are duplicate
// keys.
func decodeAll(t testing.TB, where string, docs []string) objects {
	t.Helper()
	var o objects
	for _, doc := range docs {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s: %v\n%s", where, err, doc)
		}
		gvk := tm.APIVersion + ", Kind=" + tm.Kind
		strict := func(into any) {
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s: %s does not decode strictly: %v\n%s", where, gvk, err, doc)
			}
		}
		dup := func(have bool) {
			if have {
				t.Fatalf("%s: a second %s", where, gvk)
			}
		}
		switch gvk {
		case "apps/v1, Kind=StatefulSet":
			dup(o.sts != nil)
			o.sts = new(appsv1.StatefulSet)
			strict(o.sts)
		case "v1, Kind=Service":
			dup(o.svc != nil)
			o.svc = new(corev1.Service)
			strict(o.svc)
		case "v1, Kind=ConfigMap":
			cm := new(corev1.ConfigMap)
			strict(cm)
			if _, ok := cm.Data["collector.json"]; ok {
				dup(o.dashboard != nil)
				o.dashboard = cm
				break
			}
			dup(o.cm != nil)
			o.cm = cm
		case "v1, Kind=Pod":
			dup(o.testPod != nil)
			o.testPod = new(corev1.Pod)
			strict(o.testPod)
		case "policy/v1, Kind=PodDisruptionBudget":
			dup(o.pdb != nil)
			o.pdb = new(policyv1.PodDisruptionBudget)
			strict(o.pdb)
		case "networking.k8s.io/v1, Kind=NetworkPolicy":
			dup(o.netpol != nil)
			o.netpol = new(networkingv1.NetworkPolicy)
			strict(o.netpol)
		case "v1, Kind=ServiceAccount":
			dup(o.sa != nil)
			o.sa = new(corev1.ServiceAccount)
			strict(o.sa)
		case "v1, Kind=Secret":
			dup(o.secret != nil)
			o.secret = new(corev1.Secret)
			strict(o.secret)
		case "monitoring.coreos.com/v1, Kind=ServiceMonitor":
			dup(o.sm != nil)
			o.sm = new(monitoringv1.ServiceMonitor)
			strict(o.sm)
		case "monitoring.coreos.com/v1, Kind=PrometheusRule":
			dup(o.rule != nil)
			o.rule = new(monitoringv1.PrometheusRule)
			strict(o.rule)
		default:
			t.Fatalf("%s: unexpected object %s", where, gvk)
		}
		o.kinds = append(o.kinds, tm.Kind)
	}
	if o.sts == nil || o.svc == nil || o.cm == nil {
		t.Fatalf("%s: want a StatefulSet, a Service and a ConfigMap, have %v", where, o.kinds)
	}
	return o
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// container returns the StatefulSet's container "collector".
func container(t testing.TB, where string, sts *appsv1.StatefulSet) corev1.Container {
	t.Helper()
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == "collector" {
			return c
		}
	}
	t.Fatalf("%s: no container named collector", where)
	return corev1.Container{}
}

// mountedConfig returns the collector config the container finds at its
// --config path (the image's entrypoint, unless overridden): the ConfigMap
// key mounted there, from the ConfigMap of the same rendering.
func mountedConfig(t testing.TB, where string, o objects) (path string, text string) {
	t.Helper()
	c := container(t, where, o.sts)
	path = configArg(t, where, c)
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range o.sts.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.ConfigMap == nil {
				t.Fatalf("%s: %s is mounted from volume %s, which is not a ConfigMap", where, path, v.Name)
			}
			if v.ConfigMap.Name != o.cm.Name {
				t.Fatalf("%s: volume %s mounts ConfigMap %q, the rendering has %q", where, v.Name, v.ConfigMap.Name, o.cm.Name)
			}
			key := rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
			text, ok := o.cm.Data[key]
			if !ok {
				t.Fatalf("%s: ConfigMap %s has no key %q for %s", where, o.cm.Name, key, path)
			}
			return path, text
		}
		t.Fatalf("%s: volume mount %s has no volume", where, vm.Name)
	}
	t.Fatalf("%s: nothing is mounted at the config path %s", where, path)
	return "", ""
}

// imageEntrypoint and imageCmd are the Dockerfile's ENTRYPOINT and CMD
// (internal/deploytest checks the Dockerfile against them).
var (
	imageEntrypoint = []string{"/collector"}
	imageCmd        = []string{"run", "--config", "/etc/collector/collector.yaml"}
)

// commandLine is what container c runs, as Kubernetes combines its command
// and args with the image's ENTRYPOINT and CMD: command replaces the
// ENTRYPOINT (and drops the CMD), args replace the CMD.
func commandLine(c corev1.Container) []string {
	cmd, args := imageEntrypoint, imageCmd
	if len(c.Command) > 0 {
		cmd, args = c.Command, nil
	}
	if len(c.Args) > 0 {
		args = c.Args
	}
	return append(append([]string{}, cmd...), args...)
}

// configArg returns the --config path the container runs with.
func configArg(t testing.TB, where string, c corev1.Container) string {
	t.Helper()
	args := commandLine(c)
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
	}
	t.Fatalf("%s: the container runs %q, without --config", where, args)
	return ""
}

// configMap decodes a collector config text (which must be a YAML mapping).
func configMap(t testing.TB, where, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.UnmarshalStrict([]byte(text), &m); err != nil {
		t.Fatalf("%s: the collector config is not a YAML mapping: %v\n%s", where, err, text)
	}
	return m
}

// referenceKeys returns the dotted key paths of configs/collector.yaml, which
// names every key the code knows (internal/deploytest checks that), with
// sources.* and simulator.settings.* left open.
func referenceKeys(t testing.TB) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	flatten(configMap(t, "configs/collector.yaml", string(read(t, "configs/collector.yaml"))), "", keys)
	return keys
}

// flatten adds the dotted paths of every mapping key of v (not descending
// into lists).
func flatten(v any, prefix string, out map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out[p] = true
		flatten(sub, p, out)
	}
}

// unknownKeys returns the keys of cfg that configs/collector.yaml does not
// name. A source's block (sources.NAME.*) is checked against
// sources.default.*.
func unknownKeys(t testing.TB, cfg map[string]any) []string {
	t.Helper()
	ref := referenceKeys(t)
	have := map[string]bool{}
	flatten(cfg, "", have)
	var out []string
	for k := range have {
		parts := strings.Split(k, ".")
		if parts[0] == "sources" && len(parts) >= 2 {
			if len(parts) == 2 {
				continue // a source's name
			}
			parts[1] = "default"
		}
		if parts[0] == "simulator" && len(parts) > 2 && parts[1] == "settings" {
			continue
		}
		if !ref[strings.Join(parts, ".")] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// splitYAML splits a multi-document YAML stream.
func splitYAML(b []byte) []string {
	var out []string
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		out = append(out, string(d))
	}
	return out
}

func mustf(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}
