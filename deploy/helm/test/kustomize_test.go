package helmtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const k8sDir = "deploy/kubernetes"

// kustomize builds a kustomization directory as `kubectl apply -k` would,
// with kustomize's own library, and decodes the result strictly.
func kustomize(t testing.TB, dir string) objects {
	t.Helper()
	objs, err := kustomizeErr(t, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return objs
}

func kustomizeErr(t testing.TB, dir string) (objects, error) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return objects{}, err
	}
	y, err := m.AsYaml()
	if err != nil {
		return objects{}, err
	}
	return decodeAll(t, "kustomize build "+dir, splitYAML(y)), nil
}

// copyBase copies deploy/kubernetes into a temporary directory.
func copyBase(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(filepath.Join(root(t), k8sDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b := read(t, k8sDir+"/"+e.Name())
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

var hashedName = regexp.MustCompile(`^collector-[a-z0-9]{10}$`)

func TestKustomizeBaseBuildsValidObjectsWithoutASecret(t *testing.T) {
	o := kustomize(t, filepath.Join(root(t), k8sDir))
	// The operator's Secret is not part of the base: apply -k must never
	// overwrite it.
	if o.secret != nil {
		t.Errorf("the base renders Secret %s: kubectl apply -k would overwrite the operator's", o.secret.Name)
	}
	mustf(t, o.sm == nil && o.rule == nil, "the base holds objects that need the Prometheus Operator's CRDs: %v", o.kinds)
	// The ConfigMap is generated, its name carries a hash of collector.yaml,
	// and the StatefulSet mounts it by that name.
	mustf(t, hashedName.MatchString(o.cm.Name), "ConfigMap %q has no content hash in its name: a config change would not roll the pod", o.cm.Name)
	path, text := mountedConfig(t, "kustomize", o)
	mustf(t, path == "/etc/collector/collector.yaml", "config path %s", path)
	mustf(t, text == string(read(t, k8sDir+"/collector.yaml")), "the mounted config is not deploy/kubernetes/collector.yaml")
	if bad := unknownKeys(t, configMap(t, "collector.yaml", text)); len(bad) > 0 {
		t.Errorf("deploy/kubernetes/collector.yaml has keys configs/collector.yaml does not name: %v", bad)
	}
	// The Secret it reads, by the keys the chart reads too.
	cfg := configMap(t, "kustomize", text)
	refs := secretRefs(t, o.sts, cfg)
	for key, ref := range refs {
		mustf(t, ref.name == "collector", "%s: from Secret %q key %s, want Secret collector (docs/kubernetes.md)", ref.via, ref.name, key)
	}
	mustf(t, slices.Equal(sortedKeys(refs), wantSecretKeys(cfg)), "Secret keys %v, want %v", sortedKeys(refs), wantSecretKeys(cfg))
	mustf(t, !refs["api-secret"].optional && strings.HasPrefix(refs["api-secret"].via, "COLLECTOR_API__SECRET_FILE "), "api-secret: %+v, want a file named by COLLECTOR_API__SECRET_FILE", refs["api-secret"])
	// The edge token goes with the edge block: a core-only collector.yaml
	// drops both, and its Secret needs no edge-token.
	mustf(t, strings.HasPrefix(refs["edge-token"].via, "config edge.token_file "), "edge-token: %+v, want the file of collector.yaml's edge.token_file", refs["edge-token"])
	mustf(t, container(t, "kustomize", o.sts).Image == "ghcr.io/svcexport/collector:0.1.0", "image %q", container(t, "kustomize", o.sts).Image)
}

func TestKustomizeConfigChangeRollsThePod(t *testing.T) {
	dir := copyBase(t)
	before := kustomize(t, dir)
	cfg := filepath.Join(dir, "collector.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "format: json", "format: text", 1)
	if changed == string(b) {
		t.Fatal("collector.yaml has no log format json to change")
	}
	if err := os.WriteFile(cfg, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	after := kustomize(t, dir)
	mustf(t, before.cm.Name != after.cm.Name, "a changed collector.yaml keeps ConfigMap name %s", before.cm.Name)
	vol := func(o objects) string {
		for _, v := range o.sts.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
		}
		return ""
	}
	mustf(t, vol(after) == after.cm.Name && vol(before) != vol(after), "the StatefulSet's pod template does not change with the config (%s -> %s): the pod would not roll", vol(before), vol(after))
}

func TestKustomizeServiceMonitorExampleScrapesTheBase(t *testing.T) {
	o := kustomize(t, filepath.Join(root(t), k8sDir))
	var sm monitoringv1.ServiceMonitor
	if err := yaml.UnmarshalStrict(read(t, k8sDir+"/servicemonitor.yaml"), &sm); err != nil {
		t.Fatalf("servicemonitor.yaml: %v", err)
	}
	checkServiceMonitor(t, "servicemonitor.yaml", &sm, o.svc)
}
