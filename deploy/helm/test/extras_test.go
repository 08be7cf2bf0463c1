package helmtest

import (
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// Issue 24: what the configuration points at (a private CA, an mTLS pair, a
// password or token file) must be mountable, no secret may reach the
// ConfigMap, and the optional objects (PodDisruptionBudget, NetworkPolicy,
// Grafana dashboard, helm test hook) render only when asked for.

// configKeys are the chart's lists of secret and file keys
// (files/config-keys.yaml; internal/deploytest keeps them equal to the
// code's).
type configKeys struct {
	Secrets struct{ Global, Sink []string } `json:"secrets"`
	Files   struct{ Global, Sink []string } `json:"files"`
}

func chartConfigKeys(t testing.TB) configKeys {
	t.Helper()
	var k configKeys
	if err := yaml.UnmarshalStrict(read(t, chartDir+"/files/config-keys.yaml"), &k); err != nil {
		t.Fatalf("%s/files/config-keys.yaml: %v", chartDir, err)
	}
	if len(k.Secrets.Global) == 0 || len(k.Secrets.Sink) == 0 || len(k.Files.Global) == 0 || len(k.Files.Sink) == 0 {
		t.Fatalf("%s/files/config-keys.yaml: an empty list: %+v", chartDir, k)
	}
	return k
}

// setPath returns a config map with value at the dotted path; a segment
// "sinks[0]" is a list of one sink block, of the type its key names.
func setPath(dotted string, value any) map[string]any {
	segs := strings.Split(dotted, ".")
	var v any = value
	for i := len(segs) - 1; i >= 0; i-- {
		if name, ok := strings.CutSuffix(segs[i], "[0]"); ok {
			block := v.(map[string]any)
			block["name"], block["type"] = "s", segs[i+1] // a sink of the key's type
			v = map[string]any{name: []any{block}}
			continue
		}
		v = map[string]any{segs[i]: v}
	}
	return v.(map[string]any)
}

// sinkPaths returns the dotted paths of a sink-block key in the one-sink
// section and in an entry of "sinks".
func sinkPaths(key string) []string { return []string{"sink." + key, "sinks[0]." + key} }

// mtlsValues mount a CA and an mTLS pair for Kafka (a cert-manager Secret,
// whole), the password of a second sink (ClickHouse, in "sinks", whose
// passwords cannot come from the environment) with items, and a projected
// token through extraVolumes.
const mtlsValues = `
secretMounts:
  - name: kafka-tls
    secretName: collector-kafka-tls
    mountPath: /etc/collector-tls/kafka
  - name: lake-password
    secretName: collector-lake
    mountPath: /etc/collector-secrets/lake
    items: [{key: password, path: clickhouse-password}]
extraVolumes:
  - name: oauth
    projected: {sources: [{serviceAccountToken: {path: token, audience: kafka}}]}
extraVolumeMounts:
  - {name: oauth, mountPath: /var/run/oauth, readOnly: true}
config:
  sink: null
  sinks:
    - name: siem
      type: kafka
      kafka:
        brokers: ["kafka-0.kafka-headless.kafka.svc:9093"]
        tls:
          enabled: true
          ca_file: /etc/collector-tls/kafka/ca.crt
          cert_file: /etc/collector-tls/kafka/tls.crt
          key_file: /etc/collector-tls/kafka/tls.key
        sasl:
          mechanism: OAUTHBEARER
          oauth: {token_file: /var/run/oauth/token}
    - name: lake
      type: clickhouse
      clickhouse:
        addr: ["clickhouse.db.svc:9440"]
        username: svc_collector
        password_file: /etc/collector-secrets/lake/clickhouse-password
        tls: {enabled: true, ca_file: /etc/ssl/certs/ca-certificates.crt}
`

func TestChartMountsTheSecretsTheConfigPointsAt(t *testing.T) {
	r := mustRender(t, "team-a", values(t, mtlsValues))
	ctr := container(t, "mtls", r.sts)
	vols := map[string]corev1.Volume{}
	for _, v := range r.sts.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.Name] = m
	}
	for name, want := range map[string]struct{ secret, path string }{
		"kafka-tls":     {"collector-kafka-tls", "/etc/collector-tls/kafka"},
		"lake-password": {"collector-lake", "/etc/collector-secrets/lake"},
	} {
		v, ok := vols[name]
		if !ok || v.Secret == nil || v.Secret.SecretName != want.secret {
			t.Errorf("volume %s: %+v, want Secret %s", name, v, want.secret)
			continue
		}
		// The collector runs as 65532 in the fsGroup: the files must be
		// group-readable.
		if m := v.Secret.DefaultMode; m == nil || *m&0o040 == 0 {
			t.Errorf("volume %s: defaultMode %v is not group-readable", name, m)
		}
		m, ok := mounts[name]
		mustf(t, ok && m.MountPath == want.path && m.ReadOnly, "mount of %s: %+v, want %s read-only", name, m, want.path)
	}
	mustf(t, reflect.DeepEqual(vols["lake-password"].Secret.Items, []corev1.KeyToPath{{Key: "password", Path: "clickhouse-password"}}),
		"lake-password items: %+v", vols["lake-password"].Secret.Items)
	mustf(t, vols["oauth"].Projected != nil && mounts["oauth"].MountPath == "/var/run/oauth", "extraVolumes/extraVolumeMounts oauth: %+v %+v", vols["oauth"], mounts["oauth"])
	// The chart's own mounts stay.
	for _, n := range []string{"config", "data", "tmp", "credentials"} {
		_, ok := mounts[n]
		mustf(t, ok, "the mount %s is gone", n)
	}

	// Every file key of the rendered config is on a volume of the pod, and,
	// for a Secret with items, one of its files.
	_, text := mountedConfig(t, "mtls", r.objects)
	cfg := configMap(t, "mtls", text)
	files := fileKeys(t, cfg)
	for _, k := range []string{"sinks[0].kafka.tls.ca_file", "sinks[0].kafka.tls.cert_file", "sinks[0].kafka.tls.key_file",
		"sinks[0].kafka.sasl.oauth.token_file", "sinks[1].clickhouse.password_file"} {
		_, ok := files[k]
		mustf(t, ok, "the rendered config has no %s: %v", k, files)
	}
	for k, p := range files {
		if strings.HasPrefix(p, "/etc/ssl/certs/") {
			continue // the image's CA bundle
		}
		m, ok := mountOf(ctr, p)
		if !ok {
			t.Errorf("config %s %s is on no volume of the pod", k, p)
			continue
		}
		if s := vols[m.Name].Secret; s != nil && len(s.Items) > 0 {
			rel := strings.TrimPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")
			mustf(t, slices.ContainsFunc(s.Items, func(it corev1.KeyToPath) bool { return it.Path == rel }),
				"config %s %s: Secret %s mounts only %+v", k, p, s.SecretName, s.Items)
		}
	}
	mustf(t, strings.Contains(r.notes, "collector-kafka-tls at /etc/collector-tls/kafka"), "NOTES.txt does not name the mounted Secrets:\n%s", r.notes)
}

// fileKeys returns the file keys (files/config-keys.yaml) the config sets,
// by path, in "sink" and in every entry of "sinks".
func fileKeys(t testing.TB, cfg map[string]any) map[string]string {
	t.Helper()
	keys := chartConfigKeys(t)
	out := map[string]string{}
	add := func(prefix string, block any, ks []string) {
		for _, k := range ks {
			if s, _ := get(block, strings.Split(k, ".")...).(string); s != "" {
				out[prefix+k] = s
			}
		}
	}
	add("", cfg, keys.Files.Global)
	add("sink.", cfg["sink"], keys.Files.Sink)
	sinks, _ := cfg["sinks"].([]any)
	for i, s := range sinks {
		add("sinks["+string(rune('0'+i))+"].", s, keys.Files.Sink)
	}
	return out
}

// mountOf returns the container's mount that holds the file p.
func mountOf(c corev1.Container, p string) (corev1.VolumeMount, bool) {
	p = path.Clean(p)
	for _, m := range c.VolumeMounts {
		mp := path.Clean(m.MountPath)
		if p == mp || strings.HasPrefix(p, mp+"/") {
			return m, true
		}
	}
	return corev1.VolumeMount{}, false
}

func TestChartRefusesEverySecretInConfig(t *testing.T) {
	keys := chartConfigKeys(t)
	var paths []string
	paths = append(paths, keys.Secrets.Global...)
	for _, k := range keys.Secrets.Sink {
		paths = append(paths, sinkPaths(k)...)
	}
	for _, p := range paths {
		_, err := render(t, "team-a", map[string]any{"config": setPath(p, "oops")})
		want := "config." + p + " is a secret"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "config."+p+"_file") {
			t.Errorf("config.%s in values: err = %v, want one saying %q and naming config.%s_file", p, err, want, p)
		}
		if err != nil && strings.Contains(err.Error(), "oops") {
			t.Errorf("config.%s: the error shows the secret: %v", p, err)
		}
	}
	// The case, in full: a second sink's ClickHouse password.
	_, err := render(t, "team-a", values(t, `config: {sinks: [{name: lake, type: clickhouse, clickhouse: {addr: ["ch:9440"], password: hunter2}}]}`))
	if err == nil || !strings.Contains(err.Error(), "config.sinks[0].clickhouse.password is a secret") || !strings.Contains(err.Error(), "secretMounts") {
		t.Errorf("sinks[0].clickhouse.password in values: err = %v", err)
	}
}

func TestChartRefusesFilesOnNoVolumeAndMountsOverItsOwn(t *testing.T) {
	keys := chartConfigKeys(t)
	var paths []string
	paths = append(paths, keys.Files.Global...)
	for _, k := range keys.Files.Sink {
		paths = append(paths, sinkPaths(k)...)
	}
	for _, p := range paths {
		_, err := render(t, "team-a", map[string]any{"config": setPath(p, "/etc/ca/ca.pem")})
		if err == nil || !strings.Contains(err.Error(), "config."+p+` "/etc/ca/ca.pem" is on no volume`) || !strings.Contains(err.Error(), "secretMounts") {
			t.Errorf("config.%s on no volume: err = %v", p, err)
		}
		// Mounted, it renders.
		vals := map[string]any{"config": setPath(p, "/etc/ca/ca.pem"), "secretMounts": []any{map[string]any{"name": "ca", "secretName": "ca", "mountPath": "/etc/ca"}}}
		if _, err := render(t, "team-a", vals); err != nil {
			t.Errorf("config.%s on a secretMount: %v", p, err)
		}
	}
	for bad, want := range map[string]string{
		`config: {sink: {kafka: {tls: {ca_file: ca.pem}}}}`:                                                                          "must be an absolute path",
		`config: {sink: {kafka: {tls: {ca_file: /etc/cab/ca.pem}}}, secretMounts: [{name: ca, secretName: ca, mountPath: /etc/ca}]}`: "is on no volume",
		`secretMounts: [{name: tls, secretName: tls, mountPath: /etc/collector/tls}]`:                                                "overlaps the chart's mount /etc/collector",
		`secretMounts: [{name: tls, secretName: tls, mountPath: /data/tls}]`:                                                         "overlaps the chart's mount /data",
		`secretMounts: [{name: tls, secretName: tls, mountPath: /etc}]`:                                                              "overlaps the chart's mount /etc/collector",
		`secretMounts: [{name: data, secretName: tls, mountPath: /etc/tls}]`:                                                         `the volume name "data" is taken`,
		`secretMounts: [{name: a, secretName: a, mountPath: /etc/tls}, {name: b, secretName: b, mountPath: /etc/tls/}]`:              "mounted twice",
		`extraVolumeMounts: [{name: nope, mountPath: /etc/nope}]`:                                                                    "not in extraVolumes or secretMounts",
		`extraVolumes: [{name: tmp, emptyDir: {}}]`:                                                                                  `the volume name "tmp" is taken`,
		`secretMounts: [{name: tls, mountPath: /etc/tls}]`:                                                                           "secretName",
	} {
		_, err := render(t, "team-a", values(t, bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %s: err = %v, want one saying %s", bad, err, want)
		}
	}
	// The image's CA bundle and the data volume need no mount.
	for _, ok := range []string{
		`config: {sink: {kafka: {tls: {ca_file: /etc/ssl/certs/ca-certificates.crt}}}}`,
		`config: {sink: {clickhouse: {password_file: /data/secrets/password}}}`,
		`secretMounts: [{name: tls, secretName: tls, mountPath: /etc/collector-tls}]`,
	} {
		if _, err := render(t, "team-a", values(t, ok)); err != nil {
			t.Errorf("values %s: %v", ok, err)
		}
	}
}

func TestChartOptionalObjectsRenderOnlyWhenEnabled(t *testing.T) {
	off := mustRender(t, "team-a", nil)
	mustf(t, off.pdb == nil && off.netpol == nil && off.dashboard == nil, "by default: PDB %v, NetworkPolicy %v, dashboard %v", off.pdb != nil, off.netpol != nil, off.dashboard != nil)

	on := mustRender(t, "team-a", values(t, `
podDisruptionBudget: {enabled: true}
networkPolicy:
  enabled: true
  metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]
  egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kafka}}}], ports: [{port: 9093}]}]
grafanaDashboard: {enabled: true, annotations: {grafana_folder: Collectors}}`))
	podLabels := on.sts.Spec.Template.Labels
	selects := func(sel map[string]string, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}

	// The PodDisruptionBudget: the collector's pod, evictable by default
	// (a drain stops it gracefully), never blocking on an unready pod.
	if on.pdb == nil {
		t.Fatal("podDisruptionBudget.enabled: no PodDisruptionBudget")
	}
	mustf(t, selects(on.pdb.Spec.Selector.MatchLabels, podLabels), "the PDB's selector %v does not select the pod %v", on.pdb.Spec.Selector.MatchLabels, podLabels)
	mustf(t, on.pdb.Spec.MaxUnavailable != nil && on.pdb.Spec.MaxUnavailable.String() == "1" && on.pdb.Spec.MinAvailable == nil,
		"PDB maxUnavailable %v minAvailable %v, want maxUnavailable 1", on.pdb.Spec.MaxUnavailable, on.pdb.Spec.MinAvailable)
	mustf(t, on.pdb.Spec.UnhealthyPodEvictionPolicy != nil && *on.pdb.Spec.UnhealthyPodEvictionPolicy == "AlwaysAllow", "PDB unhealthyPodEvictionPolicy %v", on.pdb.Spec.UnhealthyPodEvictionPolicy)
	zero := mustRender(t, "team-a", values(t, `podDisruptionBudget: {enabled: true, maxUnavailable: 0}`))
	mustf(t, zero.pdb != nil && zero.pdb.Spec.MaxUnavailable.String() == "0", "maxUnavailable 0: %v", zero.pdb)

	// The NetworkPolicy: in, only the metrics port from the given peers
	// and the test pod; out, DNS and the given rules.
	if on.netpol == nil {
		t.Fatal("networkPolicy.enabled: no NetworkPolicy")
	}
	np := on.netpol.Spec
	mustf(t, selects(np.PodSelector.MatchLabels, podLabels), "the NetworkPolicy's podSelector %v does not select the pod", np.PodSelector.MatchLabels)
	mustf(t, len(np.Ingress) == 1 && len(np.Ingress[0].Ports) == 1 && np.Ingress[0].Ports[0].Port.IntValue() == 9464, "ingress %+v, want port 9464 only", np.Ingress)
	mustf(t, len(np.Ingress[0].From) == 2 && np.Ingress[0].From[0].NamespaceSelector != nil, "ingress from %+v, want the monitoring namespace and the test pod", np.Ingress[0].From)
	if on.testPod != nil && len(np.Ingress[0].From) == 2 {
		mustf(t, selects(np.Ingress[0].From[1].PodSelector.MatchLabels, on.testPod.Labels), "the NetworkPolicy does not let the helm test pod in")
	}
	mustf(t, slices.Contains(np.PolicyTypes, "Egress") && len(np.Egress) == 2 && np.Egress[0].Ports[0].Port.IntValue() == 53 && np.Egress[1].Ports[0].Port.IntValue() == 9093,
		"egress %+v (policyTypes %v), want DNS and the brokers", np.Egress, np.PolicyTypes)
	open := mustRender(t, "team-a", values(t, `networkPolicy: {enabled: true}`))
	mustf(t, slices.Equal(open.netpol.Spec.PolicyTypes, []networkingPolicyType{"Ingress"}) && len(open.netpol.Spec.Egress) == 0 && len(open.netpol.Spec.Ingress[0].From) == 0,
		"networkPolicy without egress or metricsFrom: %+v, want ingress to 9464 from anyone and egress open", open.netpol.Spec)

	// The Grafana dashboard: deploy/grafana/collector.json, labelled for the sidecar.
	if on.dashboard == nil {
		t.Fatal("grafanaDashboard.enabled: no dashboard ConfigMap")
	}
	mustf(t, on.dashboard.Labels["grafana_dashboard"] == "1", "dashboard labels %v, want grafana_dashboard: \"1\"", on.dashboard.Labels)
	mustf(t, on.dashboard.Annotations["grafana_folder"] == "Collectors", "dashboard annotations %v", on.dashboard.Annotations)
	mustf(t, on.dashboard.Data["collector.json"] == strings.TrimRight(string(read(t, "deploy/grafana/collector.json")), "\n"),
		"the dashboard ConfigMap is not deploy/grafana/collector.json: cp deploy/grafana/collector.json %s/files/collector-dashboard.json", chartDir)
	mustf(t, on.dashboard.Name != on.cm.Name, "the dashboard ConfigMap is named like the config's")
	// Enabling any of them leaves the pod alone.
	mustf(t, on.sts.Spec.Template.Annotations["checksum/config"] == off.sts.Spec.Template.Annotations["checksum/config"], "enabling the extras changes checksum/config")
}

type networkingPolicyType = networkingv1.PolicyType

func TestChartHelmTestHookGetsReadyz(t *testing.T) {
	r := mustRender(t, "team-a", nil)
	p := r.testPod
	if p == nil {
		t.Fatal("no helm test pod by default")
	}
	mustf(t, p.Annotations["helm.sh/hook"] == "test", "test pod annotations %v, want helm.sh/hook: test", p.Annotations)
	mustf(t, strings.Contains(p.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation"), "test pod: no before-hook-creation delete policy: a second helm test would fail on the old pod")
	mustf(t, p.Spec.RestartPolicy == corev1.RestartPolicyNever, "test pod restartPolicy %q", p.Spec.RestartPolicy)
	if len(p.Spec.Containers) != 1 {
		t.Fatalf("test pod: %d containers", len(p.Spec.Containers))
	}
	// The collector's own image runs `collector healthcheck` against pod 0
	// through the headless Service: nothing else to pull or mirror.
	c := p.Spec.Containers[0]
	mustf(t, c.Image == container(t, "helm", r.sts).Image, "test image %q, want the collector's %q", c.Image, container(t, "helm", r.sts).Image)
	addr := r.sts.Name + "-0." + r.svc.Name + "." + namespace + ".svc:9464"
	want := []string{"/collector", "healthcheck", "--addr", addr, "--path", "/readyz", "--timeout", "10s"}
	mustf(t, slices.Equal(commandLine(c), want), "the test runs %q, want %q", commandLine(c), want)
	mustf(t, c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem, "the test container is not locked down like the collector")
	// The test pod is not the collector's: no selector of the release picks it.
	for what, sel := range map[string]map[string]string{"StatefulSet": r.sts.Spec.Selector.MatchLabels, "Service": r.svc.Spec.Selector} {
		match := true
		for k, v := range sel {
			match = match && p.Labels[k] == v
		}
		mustf(t, !match, "the %s's selector %v selects the test pod %v", what, sel, p.Labels)
	}

	custom := mustRender(t, "team-a", values(t, `{image: {repository: mirror.example.com/collector, digest: "sha256:`+strings.Repeat("a", 64)+`"}, test: {timeoutSeconds: 30}}`))
	cc := custom.testPod.Spec.Containers[0]
	mustf(t, cc.Image == "mirror.example.com/collector@sha256:"+strings.Repeat("a", 64), "test image %q", cc.Image)
	mustf(t, slices.Contains(commandLine(cc), "30s"), "test.timeoutSeconds 30: the test runs %q", commandLine(cc))
	none := mustRender(t, "team-a", values(t, `test: {enabled: false}`))
	mustf(t, none.testPod == nil, "test.enabled false: a test pod")
}

// The chart gives the pod a ServiceAccount of its own (IRSA's role-arn
// annotation goes there) without mounting an API token, and passes
// args, envFrom, init containers and lifecycle hooks through to the pod.
func TestChartServiceAccountAndPodExtras(t *testing.T) {
	r := mustRender(t, "team-a", nil)
	ps := r.sts.Spec.Template.Spec
	if r.sa == nil {
		t.Fatal("no ServiceAccount by default")
	}
	mustf(t, r.sa.Name == r.sts.Name && ps.ServiceAccountName == r.sa.Name, "ServiceAccount %q, the pod runs as %q, want both the full name %q", r.sa.Name, ps.ServiceAccountName, r.sts.Name)
	mustf(t, r.sa.AutomountServiceAccountToken != nil && !*r.sa.AutomountServiceAccountToken && ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken,
		"the Kubernetes API token is mounted (ServiceAccount %v, pod %v): the collector needs none", r.sa.AutomountServiceAccountToken, ps.AutomountServiceAccountToken)
	c := container(t, "helm", r.sts)
	mustf(t, len(c.Command) == 0 && len(c.Args) == 0 && len(c.EnvFrom) == 0 && c.Lifecycle == nil && len(ps.InitContainers) == 0,
		"by default the container sets command %q, args %q, envFrom %v, lifecycle %v, init containers %v", c.Command, c.Args, c.EnvFrom, c.Lifecycle, ps.InitContainers)
	mustf(t, r.sa.Labels["app.kubernetes.io/instance"] == "team-a", "ServiceAccount labels %v", r.sa.Labels)

	const role = "arn:aws:iam::123456789012:role/collector-msk"
	x := mustRender(t, "team-a", valueSets(t)["platform"])
	ps = x.sts.Spec.Template.Spec
	mustf(t, x.sa != nil && x.sa.Name == "collector-msk" && ps.ServiceAccountName == "collector-msk", "serviceAccount.name collector-msk: ServiceAccount %v, pod runs as %q", x.sa, ps.ServiceAccountName)
	mustf(t, x.sa != nil && x.sa.Annotations["eks.amazonaws.com/role-arn"] == role, "ServiceAccount annotations %v, want the IRSA role", x.sa.Annotations)
	c = container(t, "helm", x.sts)
	mustf(t, slices.Equal(commandLine(c), []string{"/collector", "run", "--config", "/etc/collector/collector.yaml", "--no-progress"}), "args [--no-progress]: the container runs %q", commandLine(c))
	mustf(t, len(c.EnvFrom) == 1 && c.EnvFrom[0].ConfigMapRef != nil && c.EnvFrom[0].ConfigMapRef.Name == "proxy", "envFrom %+v", c.EnvFrom)
	mustf(t, len(ps.InitContainers) == 1 && ps.InitContainers[0].Name == "wait" && ps.InitContainers[0].Image == "registry.example.com/wait:1", "initContainers %+v", ps.InitContainers)
	mustf(t, c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil && c.Lifecycle.PreStop.Sleep.Seconds == 5, "lifecycle %+v", c.Lifecycle)
	// The pod-level extras leave the config alone: no roll of the pod for
	// a config reason.
	_, text := mountedConfig(t, "platform", x.objects)
	xcfg := configMap(t, "platform", text)
	mustf(t, slices.Equal(sortedKeys(secretRefs(t, x.sts, xcfg)), wantSecretKeys(xcfg)), "the chart's Secret keys are gone with envFrom: %v", secretRefs(t, x.sts, xcfg))

	// An existing account: no ServiceAccount rendered, the pod runs as it
	// (or as the namespace's default).
	own := mustRender(t, "team-a", values(t, `serviceAccount: {create: false, name: platform-collector}`))
	mustf(t, own.sa == nil && own.sts.Spec.Template.Spec.ServiceAccountName == "platform-collector", "create false, name platform-collector: ServiceAccount %v, pod runs as %q", own.sa, own.sts.Spec.Template.Spec.ServiceAccountName)
	def := mustRender(t, "team-a", values(t, `serviceAccount: {create: false}`))
	mustf(t, def.sa == nil && def.sts.Spec.Template.Spec.ServiceAccountName == "default", "create false: pod runs as %q", def.sts.Spec.Template.Spec.ServiceAccountName)
}

func TestKustomizeTLSComponentMountsTheSecretTheConfigPointsAt(t *testing.T) {
	const component = k8sDir + "/components/tls"
	if _, err := os.Stat(filepath.Join(root(t), component, "kustomization.yaml")); err != nil {
		t.Fatalf("%s: %v", component, err)
	}
	// An overlay as the component's comment shows: the base, the component,
	// and a collector.yaml pointing at the mounted files.
	dir := t.TempDir()
	base := string(read(t, k8sDir+"/collector.yaml"))
	cfg := strings.Replace(base, "    tls:\n      enabled: true\n",
		"    tls:\n      enabled: true\n      ca_file: /etc/collector-tls/ca.crt\n      cert_file: /etc/collector-tls/tls.crt\n      key_file: /etc/collector-tls/tls.key\n", 1)
	if cfg == base {
		t.Fatal("deploy/kubernetes/collector.yaml has no Kafka tls block to extend")
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("collector.yaml", cfg)
	rel := func(p string) string { // kustomize takes no absolute paths
		r, err := filepath.Rel(dir, filepath.Join(root(t), p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write("kustomization.yaml", `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [`+rel(k8sDir)+`]
components: [`+rel(component)+`]
configMapGenerator:
  - name: collector
    behavior: replace
    files: [collector.yaml]
`)
	o := kustomize(t, dir)
	ctr := container(t, "kustomize tls", o.sts)
	m, ok := mountOf(ctr, "/etc/collector-tls/ca.crt")
	if !ok {
		t.Fatalf("the component mounts nothing at /etc/collector-tls: %+v", ctr.VolumeMounts)
	}
	mustf(t, m.ReadOnly, "the TLS mount is not read-only")
	var vol *corev1.Volume
	for i, v := range o.sts.Spec.Template.Spec.Volumes {
		if v.Name == m.Name {
			vol = &o.sts.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "collector-tls" {
		t.Fatalf("the mount %s is not the Secret collector-tls: %+v", m.Name, vol)
	}
	mustf(t, vol.Secret.DefaultMode != nil && *vol.Secret.DefaultMode&0o040 != 0, "collector-tls defaultMode %v is not group-readable", vol.Secret.DefaultMode)
	// The base's mounts stay, and the config's files are on the mount.
	for _, n := range []string{"config", "data", "tmp", "credentials"} {
		mustf(t, slices.ContainsFunc(ctr.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == n }), "the component drops the base's mount %s", n)
	}
	_, text := mountedConfig(t, "kustomize tls", o)
	files := fileKeys(t, configMap(t, "kustomize tls", text))
	mustf(t, len(files) == 4 && files["edge.token_file"] != "", "the overlay's config names %v, want the base's edge token and the three TLS files", files)
	for k, p := range files {
		_, ok := mountOf(ctr, p)
		mustf(t, ok, "config %s %s is on no volume of the pod", k, p)
	}
}
