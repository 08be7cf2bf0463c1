package helmtest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The collector reads api.secret_file at every token renewal and when the
// token endpoint refuses the secret, and edge.token_file when the edge API
// refuses the token (docs/api.md C1, C6): rotating the file is enough. On
// Kubernetes that holds only when the file is on a Secret volume mounted
// without subPath, which the kubelet updates in place; a variable from
// secretKeyRef is read once, at the pod's start, and needed a `kubectl
// rollout restart`.

// credentialFile returns the path the pod's config (rendered config, then
// the variable, which wins) gives key (api.secret_file, edge.token_file),
// and the Secret volume and key that hold it ("" when none).
func credentialFile(t testing.TB, where string, o objects, key string) (path, secretName, secretKey string) {
	t.Helper()
	_, text := mountedConfig(t, where, o)
	cfg := configMap(t, where, text)
	for k, r := range secretRefs(t, o.sts, cfg) {
		for _, kv := range rotatedSecretFiles {
			if kv[0] != key {
				continue
			}
			for _, prefix := range []string{kv[1] + " ", "config " + key + " "} {
				if p, ok := strings.CutPrefix(r.via, prefix); ok {
					return p, r.name, k
				}
			}
		}
	}
	return "", "", ""
}

func TestChartGivesTheAPISecretAndEdgeTokenAsFilesARotationUpdates(t *testing.T) {
	t.Parallel()
	// The default (core API only): the API secret is a file of the
	// release's Secret, and no edge token is asked for.
	r := mustRender(t, "team-a", nil)
	c := container(t, "default", r.sts)
	p, name, key := credentialFile(t, "default", r.objects, "api.secret_file")
	mustf(t, p == "/etc/collector-credentials/api-secret" && name == r.sts.Name && key == "api-secret",
		"api.secret_file %q from Secret %q key %q, want /etc/collector-credentials/api-secret from Secret %s key api-secret", p, name, key, r.sts.Name)
	mustf(t, envValue(c, "COLLECTOR_EDGE__TOKEN_FILE") == "", "COLLECTOR_EDGE__TOKEN_FILE set without config.edge.base_url: a core-only collector would fail at start on a Secret without edge-token")
	// A Secret without edge-token (or any optional key) must still mount:
	// the volume takes the Secret whole, not a list of keys.
	for _, v := range r.sts.Spec.Template.Spec.Volumes {
		if v.Name == "credentials" {
			mustf(t, v.Secret != nil && len(v.Secret.Items) == 0, "volume credentials: %+v, want the whole Secret (an item naming a missing key fails the mount)", v.Secret)
		}
	}

	// With the edge API, the edge token is the next file of the same Secret.
	e := mustRender(t, "team-a", values(t, `{existingSecret: team-a-credentials, config: {edge: {base_url: "https://edge.example.com"}}}`))
	p, name, key = credentialFile(t, "edge", e.objects, "edge.token_file")
	mustf(t, p == "/etc/collector-credentials/edge-token" && name == "team-a-credentials" && key == "edge-token",
		"edge.token_file %q from Secret %q key %q, want /etc/collector-credentials/edge-token from team-a-credentials key edge-token", p, name, key)

	// A file of the operator's own wins: the chart sets no variable over it.
	own := mustRender(t, "team-a", values(t, `
secretMounts: [{name: edge, secretName: edge-token, mountPath: /etc/collector-edge}]
config: {edge: {base_url: "https://edge.example.com", token_file: /etc/collector-edge/token}}`))
	mustf(t, envValue(container(t, "own", own.sts), "COLLECTOR_EDGE__TOKEN_FILE") == "", "COLLECTOR_EDGE__TOKEN_FILE overrides config.edge.token_file")
	p, name, key = credentialFile(t, "own", own.objects, "edge.token_file")
	mustf(t, p == "/etc/collector-edge/token" && name == "edge-token" && key == "token", "edge.token_file %q from Secret %q key %q", p, name, key)

	// A variable would win over the file and hold the start's value.
	for _, v := range []string{"COLLECTOR_API__SECRET", "COLLECTOR_EDGE__TOKEN", "COLLECTOR_API__SECRET_FILE"} {
		_, err := render(t, "team-a", values(t, `extraEnv: [{name: `+v+`, value: x}]`))
		if err == nil || !strings.Contains(err.Error(), "extraEnv: "+v+" is the chart's") {
			t.Errorf("extraEnv %s: err = %v, want a refusal", v, err)
		}
	}
	// The chart's Secret volume is its own.
	for bad, want := range map[string]string{
		`secretMounts: [{name: x, secretName: x, mountPath: /etc/collector-credentials}]`:     "overlaps the chart's mount /etc/collector-credentials",
		`secretMounts: [{name: x, secretName: x, mountPath: /etc/collector-credentials/tls}]`: "overlaps the chart's mount /etc/collector-credentials",
		`secretMounts: [{name: credentials, secretName: x, mountPath: /etc/x}]`:               `the volume name "credentials" is taken`,
	} {
		_, err := render(t, "team-a", values(t, bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %s: err = %v, want one saying %s", bad, err, want)
		}
	}
}

func TestKustomizeGivesTheAPISecretAndEdgeTokenAsFilesARotationUpdates(t *testing.T) {
	t.Parallel()
	o := kustomize(t, filepath.Join(root(t), k8sDir))
	for key, want := range map[string]string{"api.secret_file": "api-secret", "edge.token_file": "edge-token"} {
		p, name, k := credentialFile(t, "kustomize", o, key)
		mustf(t, p == "/etc/collector-credentials/"+want && name == "collector" && k == want,
			"%s %q from Secret %q key %q, want /etc/collector-credentials/%s from Secret collector", key, p, name, k, want)
	}
	c := container(t, "kustomize", o.sts)
	mustf(t, !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "COLLECTOR_EDGE__TOKEN_FILE" }),
		"the base sets COLLECTOR_EDGE__TOKEN_FILE: a collector.yaml without the edge API would still need the Secret's edge-token")
}
