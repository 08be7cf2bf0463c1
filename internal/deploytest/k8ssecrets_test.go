package deploytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// k8sSecretDir writes the operator's Secret as the kubelet's atomic writer
// mounts it: the files in a timestamped directory, a symlink ..data to it,
// and per key a symlink KEY -> ..data/KEY (a rotation writes a new
// directory and swaps ..data, so the collector must read through the
// links). Each file holds a placeholder.
func k8sSecretDir(t *testing.T, keys ...string) string {
	t.Helper()
	dir := t.TempDir()
	const ts = "..2026_12_06_05_00_00.000000001"
	if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := os.WriteFile(filepath.Join(dir, ts, k), []byte("placeholder-"+k+"\n"), 0o440); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestKubernetesCollectorReadsTheAPISecretAndEdgeTokenFromTheMountedSecret
// checks the kustomize base against the collector itself: the
// configuration it loads (collector.yaml and the StatefulSet's variables)
// takes the API secret and the edge token from files of the mounted Secret,
// which the kubelet updates in place and the collector reads again at every
// renewal and refusal (docs/api.md C1, C6), so that rotating the Secret
// needs no restart; no variable holds them (a pod reads those at start
// only). With the Secret's files where the kubelet puts them, the
// collector's start-up check of its files passes, also for a core-only
// collector.yaml whose Secret has no edge-token.
func TestKubernetesCollectorReadsTheAPISecretAndEdgeTokenFromTheMountedSecret(t *testing.T) {
	t.Parallel()
	b := loadK8s(t)
	env := k8sEnv(t, b)
	for _, v := range []string{"COLLECTOR_API__SECRET", "COLLECTOR_EDGE__TOKEN"} {
		if _, ok := env[v]; ok {
			t.Errorf("statefulset.yaml sets %s: a pod reads its variables only at start, so a rotated Secret would need a restart", v)
		}
	}
	if b.cfg.API.Secret.IsSet() || b.cfg.Edge.Token.IsSet() {
		t.Errorf("the base's configuration holds the API secret or the edge token inline, which wins over the files")
	}
	files := k8sSecretFiles(t, b)
	for _, k := range []string{"api-secret", "edge-token"} {
		if files[k] == "" {
			t.Errorf("the base's collector reads no file of Secret key %s (api.secret_file %q, edge.token_file %q)", k, b.cfg.API.SecretFile, b.cfg.Edge.TokenFile)
		}
	}
	mount := files["api-secret"]
	if mount == "" {
		t.FailNow()
	}

	// moved points the file keys at dir instead of the Secret's mount: the
	// variable wins over collector.yaml, as in the pod.
	moved := func(dir string, withEdge bool) map[string]string {
		e := merge(env, map[string]string{"COLLECTOR_API__SECRET_FILE": strings.Replace(b.cfg.API.SecretFile, mount, dir, 1)})
		if withEdge {
			e["COLLECTOR_EDGE__TOKEN_FILE"] = strings.Replace(b.cfg.Edge.TokenFile, mount, dir, 1)
		}
		return e
	}
	text := read(t, k8sDir+"/collector.yaml")
	cfg := mustLoad(t, k8sDir+"/collector.yaml", text, moved(k8sSecretDir(t, "api-secret", "edge-token", "kafka-sasl-password"), true))
	if err := cfg.CheckFiles(); err != nil {
		t.Errorf("the base's collector with the Secret's files: %v", err)
	}

	// Core only: collector.yaml without its edge block; the Secret has no
	// edge-token, which is then no file at all.
	var m map[string]any
	if err := yaml.Unmarshal(text, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "edge")
	core, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	dir := k8sSecretDir(t, "api-secret", "kafka-sasl-password")
	cfg = mustLoad(t, "collector.yaml without edge", core, moved(dir, false))
	if err := cfg.CheckFiles(); err != nil {
		t.Errorf("a core-only collector.yaml with a Secret without edge-token: %v", err)
	}
	// Why the base leaves edge.token_file to collector.yaml: a variable
	// naming it would stay when the edge block goes, and the start fails.
	cfg = mustLoad(t, "collector.yaml without edge, COLLECTOR_EDGE__TOKEN_FILE set", core,
		merge(moved(dir, false), map[string]string{"COLLECTOR_EDGE__TOKEN_FILE": filepath.Join(dir, "edge-token")}))
	if err := cfg.CheckFiles(); err == nil || !strings.Contains(err.Error(), "edge.token_file") {
		t.Errorf("edge.token_file naming a missing file without the edge API: err = %v, want one naming edge.token_file", err)
	}
}
