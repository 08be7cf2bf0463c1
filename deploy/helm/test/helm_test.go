package helmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "deploy/helm/collector"
	namespace = "collector"
)

// rendering is what `helm install --dry-run` would send to the cluster:
// every template rendered by Helm's engine, NOTES.txt apart.
type rendering struct {
	objects
	notes    string
	manifest map[string]string // template path -> rendered text
}

// render renders the chart as release `release` with vals over the chart's
// values.yaml (Helm's own merge), in strict mode: a template reading a value
// that does not exist is an error, not an empty string.
func render(t testing.TB, release string, vals map[string]any) (rendering, error) {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(root(t), chartDir))
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	if err := chrt.Validate(); err != nil {
		t.Fatalf("the chart: %v", err)
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return rendering{}, err
	}
	out, err := engine.Engine{Strict: true}.Render(chrt, rv)
	if err != nil {
		return rendering{}, err
	}
	r := rendering{manifest: map[string]string{}}
	var docs []string
	var names []string
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		base := path.Base(name)
		switch {
		case base == "NOTES.txt":
			r.notes = out[name]
			continue
		case strings.HasPrefix(base, "_"):
			continue
		}
		r.manifest[name] = out[name]
		split := releaseutil.SplitManifests(out[name])
		keys := make([]string, 0, len(split))
		for k := range split {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			docs = append(docs, split[k])
		}
	}
	r.objects = decodeAll(t, "helm template "+release, docs)
	return r, nil
}

func mustRender(t testing.TB, release string, vals map[string]any) rendering {
	t.Helper()
	r, err := render(t, release, vals)
	if err != nil {
		t.Fatalf("helm template %s: %v", release, err)
	}
	return r
}

// values parses YAML into a values map.
func values(t testing.TB, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("values %q: %v", y, err)
	}
	return m
}

// kustomizeConfigValues is deploy/kubernetes/collector.yaml as the chart's
// config: the same collector through either tool.
func kustomizeConfigValues(t testing.TB) map[string]any {
	t.Helper()
	return map[string]any{"config": configMap(t, "deploy/kubernetes/collector.yaml", string(read(t, "deploy/kubernetes/collector.yaml")))}
}

// docsHelmValues is the values file of the Helm section of docs/kubernetes.md.
func docsHelmValues(t testing.TB) map[string]any {
	t.Helper()
	doc := string(read(t, "docs/kubernetes.md"))
	i := strings.Index(doc, "\n## Helm\n")
	if i < 0 {
		t.Fatal("docs/kubernetes.md has no Helm section")
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatal("docs/kubernetes.md, Helm: no values example")
	}
	return values(t, m[1])
}

// valueSets are the configurations every check runs on.
func valueSets(t testing.TB) map[string]map[string]any {
	t.Helper()
	return map[string]map[string]any{
		"default":        nil,
		"existingSecret": values(t, `existingSecret: collector-team-a`),
		"chartSecret": values(t, `
secret:
  create: true
  apiSecret: s3cret
  kafkaSaslPassword: kafka-pw`),
		"monitoring": values(t, `
serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}, scrapeTimeout: 10s}
prometheusRule: {enabled: true, labels: {release: kube-prometheus-stack}}`),
		"extras": values(t, `
secretMounts: [{name: kafka-tls, secretName: collector-kafka-tls, mountPath: /etc/collector-tls/kafka}]
config:
  sink:
    type: kafka
    file: null
    kafka:
      brokers: ["kafka-0.kafka-headless.kafka.svc:9093"]
      tls: {enabled: true, ca_file: /etc/collector-tls/kafka/ca.crt, cert_file: /etc/collector-tls/kafka/tls.crt, key_file: /etc/collector-tls/kafka/tls.key}
podDisruptionBudget: {enabled: true}
networkPolicy: {enabled: true, metricsFrom: [{podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}], egress: [{ports: [{port: 9093}]}]}
grafanaDashboard: {enabled: true}`),
		"platform": values(t, `
serviceAccount: {name: collector-msk, annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/collector-msk"}}
extraEnvFrom: [{configMapRef: {name: proxy}}]
args: [--no-progress]
initContainers: [{name: wait, image: "registry.example.com/wait:1", args: [kafka:9098]}]
lifecycle: {preStop: {sleep: {seconds: 5}}}
config:
  sink:
    type: kafka
    file: null
    kafka:
      brokers: ["b-1.collector.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"]
      tls: {enabled: true}
      sasl: {mechanism: AWS_MSK_IAM}`),
		"kafkaConfig": kustomizeConfigValues(t),
		"readme":      docsHelmValues(t),
		"custom": values(t, `
image: {repository: registry.example.com/collector, tag: v1.2.3}
existingSecret: ch-credentials
config:
  api: {base_url: https://api.eu.example.com, key_id: key-7}
  accounts: [acme]
  sources: {default: {start: 30d}, dns: {enabled: false}}
  pipeline: {buffer_records: 100000, sink_workers: 16}
  sink:
    type: clickhouse
    file: null
    clickhouse: {addr: ["clickhouse.db.svc:9440"], database: svc, tls: {enabled: true}}
goMemLimit: ""
resources: {limits: {memory: 1Gi}}
persistence: {size: 5Gi, storageClassName: fast}
extraEnv: [{name: COLLECTOR_LOG__LEVEL, value: debug}]
podAnnotations: {example.com/team: a}
nodeSelector: {kubernetes.io/arch: arm64}`),
	}
}

func TestChartLints(t *testing.T) {
	for name, vals := range valueSets(t) {
		l := lint.All(filepath.Join(root(t), chartDir), vals, namespace, false)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint (%s): %s", name, m)
			} else {
				t.Logf("helm lint (%s): %s", name, m)
			}
		}
	}
}

func TestChartRendersValidObjectsForEveryValueSet(t *testing.T) {
	alerts := alertGroups(t)
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, "team-a", vals)
			v := effectiveValues(t, vals)
			ctr := container(t, name, r.sts)
			full := r.sts.Name

			// One collector: one replica, its Service, its own labels.
			if r.sts.Spec.Replicas == nil || *r.sts.Spec.Replicas != 1 {
				t.Errorf("replicas %v, want 1", r.sts.Spec.Replicas)
			}
			mustf(t, r.sts.Spec.ServiceName == r.svc.Name, "serviceName %q is not the Service %q", r.sts.Spec.ServiceName, r.svc.Name)
			for k, val := range r.sts.Spec.Selector.MatchLabels {
				mustf(t, r.sts.Spec.Template.Labels[k] == val, "selector %s=%s does not match the pod labels", k, val)
			}
			mustf(t, r.sts.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] == "team-a", "the selector does not hold the release: %v", r.sts.Spec.Selector.MatchLabels)
			for k, val := range r.svc.Spec.Selector {
				mustf(t, r.sts.Spec.Template.Labels[k] == val, "Service selector %s=%s does not match the pod labels", k, val)
			}
			mustf(t, len(r.sts.Spec.VolumeClaimTemplates) == 1 && r.sts.Spec.VolumeClaimTemplates[0].Name == "data", "volumeClaimTemplates: %v", r.sts.Spec.VolumeClaimTemplates)

			// A config change rolls the pod: the annotation is the hash of
			// the rendered ConfigMap.
			sum := sha256.Sum256([]byte(r.manifest[chartDirName+"/templates/configmap.yaml"]))
			mustf(t, r.sts.Spec.Template.Annotations["checksum/config"] == hex.EncodeToString(sum[:]),
				"checksum/config %q is not the rendered ConfigMap's sha256", r.sts.Spec.Template.Annotations["checksum/config"])

			// The mounted config: keys the collector knows, the chart's
			// fixed values, and whatever the values set.
			cfgPath, text := mountedConfig(t, name, r.objects)
			mustf(t, cfgPath == "/etc/collector/collector.yaml", "config path %s", cfgPath)
			cfg := configMap(t, name, text)
			if bad := unknownKeys(t, cfg); len(bad) > 0 {
				t.Errorf("the rendered config has keys configs/collector.yaml does not name: %v", bad)
			}
			if want, ok := v["config"].(map[string]any); ok {
				wantFlat, haveFlat := leaves(want), leaves(cfg)
				for k, val := range wantFlat {
					mustf(t, reflect.DeepEqual(haveFlat[k], val), "config %s = %v in the ConfigMap, %v in the values", k, haveFlat[k], val)
				}
			}
			mustf(t, strings.HasPrefix(str(cfg, "checkpoint", "path"), "/data/"), "checkpoint.path %v is not on the volume", str(cfg, "checkpoint", "path"))

			// The Secret: the one named by existingSecret, else the chart's
			// (secret.create), else the full name; keys known to the pod.
			wantSecret := full
			if es, _ := v["existingSecret"].(string); es != "" {
				wantSecret = es
			}
			refs := secretRefs(t, r.sts, cfg)
			for key, ref := range refs {
				mustf(t, ref.name == wantSecret, "%s: from Secret %q key %s, want Secret %q", ref.via, ref.name, key, wantSecret)
			}
			mustf(t, slices.Equal(sortedKeys(refs), wantSecretKeys(cfg)), "Secret keys %v, want %v", sortedKeys(refs), wantSecretKeys(cfg))
			mustf(t, !refs["api-secret"].optional && strings.HasPrefix(refs["api-secret"].via, "COLLECTOR_API__SECRET_FILE "), "api-secret: %+v, want a file named by COLLECTOR_API__SECRET_FILE", refs["api-secret"])
			create, _ := get(v, "secret", "create").(bool)
			if create {
				if r.secret == nil || r.secret.Name != wantSecret {
					t.Fatalf("secret.create: no Secret %s", wantSecret)
				}
				for k := range r.secret.StringData {
					_, ok := refs[k]
					mustf(t, ok, "the chart's Secret has key %s, which the pod does not read", k)
				}
				mustf(t, r.sts.Spec.Template.Annotations["checksum/secret"] != "", "no checksum/secret annotation with a chart-managed Secret")
			} else {
				mustf(t, r.secret == nil, "a Secret is rendered without secret.create: it would overwrite the operator's")
				mustf(t, strings.Contains(r.notes, "create secret generic "+wantSecret), "NOTES.txt does not say how to create Secret %s:\n%s", wantSecret, r.notes)
			}

			// Monitoring, only when asked for.
			smOn, _ := get(v, "serviceMonitor", "enabled").(bool)
			mustf(t, (r.sm != nil) == smOn, "ServiceMonitor rendered: %v, enabled: %v", r.sm != nil, smOn)
			if r.sm != nil {
				checkServiceMonitor(t, "chart", r.sm, r.svc)
				labels, _ := get(v, "serviceMonitor", "labels").(map[string]any)
				for k, val := range labels {
					mustf(t, r.sm.Labels[k] == val, "ServiceMonitor label %s is not %v", k, val)
				}
			}
			ruleOn, _ := get(v, "prometheusRule", "enabled").(bool)
			mustf(t, (r.rule != nil) == ruleOn, "PrometheusRule rendered: %v, enabled: %v", r.rule != nil, ruleOn)
			if r.rule != nil && !reflect.DeepEqual(r.rule.Spec.Groups, alerts) {
				t.Errorf("the PrometheusRule's groups are not those of deploy/prometheus/alerts.yaml")
			}

			// Values that reach the pod.
			mustf(t, ctr.Image == imageOf(v, mustChart(t).Metadata.AppVersion), "image %q", ctr.Image)
			mustf(t, envValue(ctr, "GOMEMLIMIT") == v["goMemLimit"], "GOMEMLIMIT %q, goMemLimit %v", envValue(ctr, "GOMEMLIMIT"), v["goMemLimit"])
			if v["goMemLimit"] == "" { // the collector takes 90% of the container's limit itself
				mustf(t, !slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" }), "GOMEMLIMIT set with an empty goMemLimit")
			}
			size := r.sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage()
			mustf(t, size.String() == get(v, "persistence", "size"), "volume size %s, persistence.size %v", size, get(v, "persistence", "size"))

			// NOTES: one release, one collector, one credential.
			mustf(t, strings.Contains(r.notes, "One release = one collector = one API credential"), "NOTES.txt does not say one release = one credential:\n%s", r.notes)
			mustf(t, strings.Contains(r.notes, "CHANGE-ME") == (get(v, "config", "api", "key_id") == "CHANGE-ME"), "NOTES.txt warns about CHANGE-ME wrongly:\n%s", r.notes)
		})
	}
}

const chartDirName = "collector"

var secretKeys = []string{"api-secret", "clickhouse-password", "edge-token", "kafka-sasl-password"}

func mustChart(t testing.TB) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(root(t), chartDir))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// effectiveValues returns vals merged over values.yaml as Helm merges them,
// as plain maps.
func effectiveValues(t testing.TB, vals map[string]any) map[string]any {
	t.Helper()
	v, err := chartutil.CoalesceValues(mustChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	y, err := v.YAML()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChartConfigChangeRollsThePodAndNothingElseDoes(t *testing.T) {
	sum := func(vals map[string]any) string {
		return mustRender(t, "team-a", vals).sts.Spec.Template.Annotations["checksum/config"]
	}
	base := sum(nil)
	mustf(t, base == sum(nil), "two renderings of the same values differ")
	mustf(t, base != sum(values(t, `config: {log: {level: debug}}`)), "a changed config leaves checksum/config alone: the pod would not roll")
	mustf(t, base == sum(values(t, `serviceMonitor: {enabled: true}`)), "enabling the ServiceMonitor changes checksum/config")
}

// reloadInPlace (issue 33): the pod does not roll on a changed config, and
// the config serves POST /-/reload, which applies it instead.
func TestChartReloadInPlaceDropsTheChecksumAndEnablesReload(t *testing.T) {
	off := mustRender(t, "team-a", nil)
	mustf(t, !strings.Contains(off.cm.Data["collector.yaml"], "reload"), "reload enabled by default:\n%s", off.cm.Data["collector.yaml"])
	on := mustRender(t, "team-a", values(t, `{reloadInPlace: true, config: {metrics: {reload: {token_file: /data/reload-token}}}}`))
	_, has := on.sts.Spec.Template.Annotations["checksum/config"]
	mustf(t, !has, "reloadInPlace keeps checksum/config: a changed config still rolls the pod")
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(on.cm.Data["collector.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	reload, _ := cfg["metrics"].(map[string]any)["reload"].(map[string]any)
	mustf(t, reload["enabled"] == true && reload["token_file"] == "/data/reload-token", "metrics.reload with reloadInPlace: %v", reload)
	mustf(t, cfg["metrics"].(map[string]any)["listen"] == "0.0.0.0:9464", "reloadInPlace lost metrics.listen: %v", cfg["metrics"])
	// Without a token the endpoint would reload the collector for whoever
	// reaches port 9464: the chart refuses, naming the key.
	for _, v := range []string{`{reloadInPlace: true}`, `{config: {metrics: {reload: {enabled: true}}}}`} {
		_, err := render(t, "team-a", values(t, v))
		mustf(t, err != nil && strings.Contains(err.Error(), "config.metrics.reload.token_file"), "%s rendered without a reload token (err %v)", v, err)
	}
}

func TestTwoReleasesAreTwoCollectors(t *testing.T) {
	a := mustRender(t, "team-a", nil)
	b := mustRender(t, "team-b", values(t, `existingSecret: team-b-credentials`))
	for _, p := range [][2]string{{a.sts.Name, b.sts.Name}, {a.svc.Name, b.svc.Name}, {a.cm.Name, b.cm.Name}} {
		mustf(t, p[0] != p[1], "two releases both render %s", p[0])
	}
	matches := func(sel, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	mustf(t, !matches(a.svc.Spec.Selector, b.sts.Spec.Template.Labels), "release a's Service selects release b's pod")
	mustf(t, !matches(a.sts.Spec.Selector.MatchLabels, b.sts.Spec.Template.Labels), "release a's StatefulSet selects release b's pod")
}

func TestChartRefusesValuesThatCannotWork(t *testing.T) {
	for bad, want := range map[string]string{
		`config: {checkpoint: {path: /var/lib/collector/checkpoint.db}}`: "config.checkpoint.path",
		`config: {checkpoint: {path: null}}`:                             "config.checkpoint.path",
		`config: {metrics: {listen: "127.0.0.1:9464"}}`:                  "config.metrics.listen",
		`config: {metrics: {listen: "0.0.0.0:8080"}}`:                    "config.metrics.listen",
		`config: {metrics: {tap: {enabled: true}}}`:                      "config.metrics.tap.token_file",
		`config: {sink: {file: {dir: ./out}}}`:                           "config.sink.file.dir",
		`config: {api: {secret: oops}}`:                                  "config.api.secret",
		`config: {edge: {token: oops}}`:                                  "config.edge.token",
		`config: {sink: {kafka: {sasl: {password: oops}}}}`:              "config.sink.kafka.sasl.password",
		`config: {sink: {clickhouse: {password: oops}}}`:                 "config.sink.clickhouse.password",
		`{existingSecret: mine, secret: {create: true, apiSecret: x}}`:   "existingSecret and secret.create",
		`secret: {create: true}`:                                         "secret.apiSecret",
		// values.schema.json: a misspelt or misplaced key is refused.
		`existingSecrets: mine`:                     "existingSecrets",
		`serviceMonitor: {enable: true}`:            "enable",
		`image: {pullPolicy: Sometimes}`:            "pullPolicy",
		`readinessProbe: {httpGet: {path: /other}}`: "httpGet",
		`serviceAccount: {annotation: {a: b}}`:      "annotation",
		`lifecycle: {preStopp: {}}`:                 "preStopp",
		`test: {image: {repository: busybox}}`:      "image",
	} {
		_, err := render(t, "team-a", values(t, bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %s: err = %v, want one naming %s", bad, err, want)
		}
	}
	// A file sink is fine anywhere under /data, and any other sink needs no dir.
	for _, ok := range []string{`config: {sink: {file: {dir: /data/files}}}`, `config: {sink: {type: stdout, file: null}}`} {
		if _, err := render(t, "team-a", values(t, ok)); err != nil {
			t.Errorf("values %s: %v", ok, err)
		}
	}
}

// alertGroups decodes deploy/prometheus/alerts.yaml strictly into the
// operator's rule groups.
func alertGroups(t testing.TB) []monitoringv1.RuleGroup {
	t.Helper()
	var f struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(read(t, "deploy/prometheus/alerts.yaml"), &f); err != nil {
		t.Fatalf("deploy/prometheus/alerts.yaml as PrometheusRule groups: %v", err)
	}
	if len(f.Groups) == 0 {
		t.Fatal("deploy/prometheus/alerts.yaml: no groups")
	}
	return f.Groups
}

// checkServiceMonitor checks that sm scrapes svc's metrics port at /metrics
// with job="collector", which the alert rules select.
func checkServiceMonitor(t testing.TB, where string, sm *monitoringv1.ServiceMonitor, svc *corev1.Service) {
	t.Helper()
	for k, v := range sm.Spec.Selector.MatchLabels {
		mustf(t, svc.Labels[k] == v, "%s ServiceMonitor: selector %s=%s does not match the Service's labels", where, k, v)
	}
	mustf(t, svc.Labels[sm.Spec.JobLabel] == "collector", "%s ServiceMonitor: jobLabel %q gives job=%q, the alerts select job=\"collector\"", where, sm.Spec.JobLabel, svc.Labels[sm.Spec.JobLabel])
	mustf(t, len(sm.Spec.Endpoints) == 1, "%s ServiceMonitor: %d endpoints", where, len(sm.Spec.Endpoints))
	for _, ep := range sm.Spec.Endpoints {
		mustf(t, ep.Port == "metrics" && ep.Path == "/metrics", "%s ServiceMonitor: endpoint port %q path %q", where, ep.Port, ep.Path)
		mustf(t, slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }), "%s ServiceMonitor: the Service has no port %q", where, ep.Port)
	}
}

type secretRef struct {
	name     string // the Secret
	optional bool   // a missing key only leaves a variable unset
	via      string // the variable, or the config key and the file
}

// rotatedSecretFiles are the configuration keys whose file the collector
// reads again at every token renewal and refusal (docs/api.md C1, C6), with
// the variable that sets each: their Secret keys must come as files of a
// Secret volume, which the kubelet updates in place, not as variables,
// which a pod reads only at its start.
var rotatedSecretFiles = [][2]string{
	{"api.secret_file", "COLLECTOR_API__SECRET_FILE"},
	{"edge.token_file", "COLLECTOR_EDGE__TOKEN_FILE"},
}

// secretRefs returns the Secret keys the collector container of sts reads:
// as variables (secretKeyRef), and as the files that api.secret_file and
// edge.token_file name (from the variable, which wins over the config file
// cfg, else from cfg). It checks that the API secret and the edge token are
// such files and not variables, each on a read-only Secret volume mounted
// without subPath (the kubelet never updates a subPath mount), readable by
// the pod's group.
func secretRefs(t testing.TB, sts *appsv1.StatefulSet, cfg map[string]any) map[string]secretRef {
	t.Helper()
	c := container(t, "secretRefs", sts)
	out := map[string]secretRef{}
	for _, e := range c.Env {
		if e.Name == "COLLECTOR_API__SECRET" || e.Name == "COLLECTOR_EDGE__TOKEN" {
			t.Errorf("env %s: a pod reads its variables only at start, so a rotated Secret would need a restart; the collector reads %s_FILE again at each renewal", e.Name, e.Name)
		}
		if e.ValueFrom == nil {
			continue
		}
		r := e.ValueFrom.SecretKeyRef
		if r == nil {
			t.Errorf("env %s: only secretKeyRef is expected", e.Name)
			continue
		}
		out[r.Key] = secretRef{name: r.Name, optional: r.Optional != nil && *r.Optional, via: e.Name}
	}
	// envFrom is the operator's (extraEnvFrom): the chart's own variables
	// are listed one by one (TestChartServiceAccountAndPodExtras checks
	// that it sets none by default).
	for _, kv := range rotatedSecretFiles {
		key, env := kv[0], kv[1]
		p, via := envValue(c, env), env
		if p == "" {
			p, via = str(cfg, strings.Split(key, ".")...), "config "+key
		}
		if p == "" {
			continue
		}
		via += " " + p
		m, ok := mountOf(c, p)
		if !ok {
			t.Errorf("%s is on no volume of the pod", via)
			continue
		}
		mustf(t, m.SubPath == "" && m.SubPathExpr == "", "%s: volume %s is mounted with subPath, which the kubelet never updates: a rotated Secret would not reach the file", via, m.Name)
		mustf(t, m.ReadOnly, "%s: volume %s is not mounted read-only", via, m.Name)
		var vol *corev1.Volume
		for i, v := range sts.Spec.Template.Spec.Volumes {
			if v.Name == m.Name {
				vol = &sts.Spec.Template.Spec.Volumes[i]
			}
		}
		if vol == nil || vol.Secret == nil {
			t.Errorf("%s: volume %s is not a Secret", via, m.Name)
			continue
		}
		// The collector runs as 65532 in the fsGroup: the files must be
		// group-readable.
		mustf(t, vol.Secret.DefaultMode != nil && *vol.Secret.DefaultMode&0o040 != 0, "%s: Secret volume %s has defaultMode %v, not group-readable", via, m.Name, vol.Secret.DefaultMode)
		k := strings.TrimPrefix(path.Clean(p), path.Clean(m.MountPath)+"/")
		if len(vol.Secret.Items) > 0 {
			i := slices.IndexFunc(vol.Secret.Items, func(it corev1.KeyToPath) bool { return it.Path == k })
			if i < 0 {
				t.Errorf("%s: Secret volume %s mounts only %+v", via, m.Name, vol.Secret.Items)
				continue
			}
			k = vol.Secret.Items[i].Key
		}
		out[k] = secretRef{name: vol.Secret.SecretName, via: via}
	}
	return out
}

// wantSecretKeys are the Secret keys a pod with config cfg reads: edge-token
// only with the edge API, so that a core-only collector starts from a
// Secret without it.
func wantSecretKeys(cfg map[string]any) []string {
	if str(cfg, "edge", "base_url") == "" {
		return slices.DeleteFunc(slices.Clone(secretKeys), func(k string) bool { return k == "edge-token" })
	}
	return secretKeys
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func imageOf(v map[string]any, appVersion string) string {
	repo, _ := get(v, "image", "repository").(string)
	if d, _ := get(v, "image", "digest").(string); d != "" {
		return repo + "@" + d
	}
	tag, _ := get(v, "image", "tag").(string)
	if tag == "" {
		tag = appVersion
	}
	return repo + ":" + tag
}

// get walks nested maps.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any, keys ...string) string {
	if s, ok := get(v, keys...).(string); ok {
		return s
	}
	return ""
}

// leaves flattens a config to its leaf values by dotted path (lists are
// leaves).
func leaves(m map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(v any, p string)
	walk = func(v any, p string) {
		if mm, ok := v.(map[string]any); ok && len(mm) > 0 {
			for k, sub := range mm {
				walk(sub, strings.TrimPrefix(p+"."+k, "."))
			}
			return
		}
		out[p] = normalize(v)
	}
	walk(m, "")
	return out
}

// normalize makes values from Helm (float64 numbers, []interface{}) and from
// sigs.k8s.io/yaml comparable.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
