package deploytest

import (
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/config"
)

const composeFile = "deploy/compose/compose.yaml"

type composeMount struct{ src, dst string }

// mounts returns a service's bind mounts (src relative to the repository)
// and named volumes (src without a slash).
func mounts(t *testing.T, svc map[string]any) []composeMount {
	t.Helper()
	var out []composeMount
	for _, v := range list(svc, "volumes") {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("compose.yaml: long volume syntax %v is not checked; use src:dst[:ro]", v)
		}
		f := strings.Split(s, ":")
		if len(f) < 2 {
			t.Fatalf("compose.yaml: volume %q has no target", s)
		}
		src := f[0]
		if strings.HasPrefix(src, ".") {
			src = path.Join("deploy/compose", src)
		}
		out = append(out, composeMount{src: src, dst: f[1]})
	}
	return out
}

func mountedAt(t *testing.T, svc map[string]any, dst string) string {
	t.Helper()
	for _, m := range mounts(t, svc) {
		if m.dst == dst {
			return m.src
		}
	}
	return ""
}

func composeEnv(svc map[string]any) map[string]string {
	env := map[string]string{}
	switch e := get(svc, "environment").(type) {
	case map[string]any:
		for k, v := range e {
			env[k] = str(v, "")
		}
	case []any:
		for _, kv := range e {
			k, v, _ := strings.Cut(str(kv, ""), "=")
			env[k] = v
		}
	}
	return env
}

func TestComposeWiresCollectorsSimulatorSinksAndMonitoring(t *testing.T) {
	doc := yamlDoc(t, composeFile)
	services := mapAt(doc, "services")
	stages := parseDockerfile(t)
	svc := func(name string) map[string]any { m, _ := services[name].(map[string]any); return m }
	for _, name := range []string{"apisim", "kafka", "clickhouse", "prometheus", "grafana"} {
		if svc(name) == nil {
			t.Errorf("compose.yaml: no service %s", name)
		}
	}
	for name, re := range map[string]string{
		"kafka":      `^apache/kafka:4\.`,
		"clickhouse": `^clickhouse/clickhouse-server:2[56]\.`,
	} {
		if img := str(svc(name), "image"); !regexp.MustCompile(re).MatchString(img) {
			t.Errorf("compose.yaml: %s image %q does not match %s", name, img, re)
		}
	}
	// Builds use the repository's Dockerfile and its stages.
	for name := range services {
		s := svc(name)
		if get(s, "build") == nil {
			continue
		}
		ctx := path.Join("deploy/compose", str(s, "build.context"))
		if ctx != "." {
			t.Errorf("compose.yaml: %s builds from %s, want the repository root", name, ctx)
		}
		if target := str(s, "build.target"); findStage(stages, target) == nil {
			t.Errorf("compose.yaml: %s builds target %q, which the Dockerfile does not have", name, target)
		}
	}
	// Every bind-mounted file exists; every healthcheck dependency has one.
	for name := range services {
		for _, m := range mounts(t, svc(name)) {
			if strings.Contains(m.src, "/") {
				if _, err := os.Stat(filepath.Join(root(t), m.src)); err != nil {
					t.Errorf("compose.yaml: %s mounts %s, which does not exist", name, m.src)
				}
			}
		}
		if deps, ok := get(svc(name), "depends_on").(map[string]any); ok {
			for dep, c := range deps {
				if svc(dep) == nil {
					t.Errorf("compose.yaml: %s depends on unknown service %s", name, dep)
				}
				if str(c, "condition") == "service_healthy" && get(svc(dep), "healthcheck") == nil {
					t.Errorf("compose.yaml: %s waits for %s to be healthy, which has no healthcheck", name, dep)
				}
			}
		}
	}

	// The simulator's keys.
	simSvc := svc("apisim")
	var simCfgPath string
	for i, a := range list(simSvc, "command") {
		if str(a, "") == "--config" {
			simCfgPath = mountedAt(t, simSvc, str(list(simSvc, "command")[i+1], ""))
		}
	}
	if simCfgPath == "" {
		t.Fatal("compose.yaml: apisim gets no mounted --config")
	}
	sim := apisim.DefaultConfig()
	dec := yaml.NewDecoder(strings.NewReader(string(read(t, simCfgPath))))
	dec.KnownFields(true)
	if err := dec.Decode(&sim); err != nil {
		t.Fatalf("%s: %v", simCfgPath, err)
	}
	if err := sim.Validate(); err != nil {
		t.Fatalf("%s: %v", simCfgPath, err)
	}

	// The collectors: their mounted configs load with their environment, and
	// point at services of this file.
	targets := prometheusTargets(t, svc("prometheus"))
	collectors, users := 0, map[string]string{}
	sinks := map[string]bool{}
	for name := range services {
		s := svc(name)
		if str(s, "build.target") != "collector" {
			continue
		}
		collectors++
		cfgSrc := mountedAt(t, s, wantEntrypoint[3])
		if cfgSrc == "" {
			t.Errorf("compose.yaml: %s mounts nothing at %s", name, wantEntrypoint[3])
			continue
		}
		env := composeEnv(s)
		cfg := mustLoad(t, cfgSrc, read(t, cfgSrc), env)
		sinks[cfg.Sink.Type] = true
		dataMount := false
		for _, m := range mounts(t, s) {
			dataMount = dataMount || (!strings.Contains(m.src, "/") && underDir(cfg.Checkpoint.Path, m.dst))
		}
		if !dataMount {
			t.Errorf("compose.yaml: %s: checkpoint.path %s is not on a named volume", name, cfg.Checkpoint.Path)
		}
		for _, u := range []string{cfg.API.BaseURL, cfg.Edge.BaseURL} {
			if u == "" {
				continue
			}
			if pu, err := url.Parse(u); err != nil || svc(pu.Hostname()) == nil {
				t.Errorf("%s: %s is not a service of compose.yaml", cfgSrc, u)
			}
		}
		var hosts []string
		switch cfg.Sink.Type {
		case config.SinkKafka:
			hosts = cfg.Sink.Kafka.Brokers
		case config.SinkClickHouse:
			hosts = cfg.Sink.ClickHouse.Addr
		}
		for _, h := range hosts {
			host, _, _ := net.SplitHostPort(h)
			if svc(host) == nil {
				t.Errorf("%s: sink address %s is not a service of compose.yaml", cfgSrc, h)
			}
			if deps, _ := get(s, "depends_on").(map[string]any); str(deps[host], "condition") != "service_healthy" {
				t.Errorf("compose.yaml: %s does not wait for %s to be healthy", name, host)
			}
		}
		// The simulator knows its key, and it is a user of its own (C4).
		found := false
		for _, k := range sim.Keys {
			if k.KeyID == cfg.API.KeyID {
				found = true
				if k.Secret != env["COLLECTOR_API__SECRET"] {
					t.Errorf("compose.yaml: %s's COLLECTOR_API__SECRET is not the simulator's secret of key %s", name, k.KeyID)
				}
				if other, dup := users[k.User]; dup {
					t.Errorf("compose.yaml: %s and %s use one API user %s: they would split one rate budget (C4)", name, other, k.User)
				}
				users[k.User] = name
			}
		}
		if !found {
			t.Errorf("%s: key_id %s is not a key of %s", cfgSrc, cfg.API.KeyID, simCfgPath)
		}
		if cfg.Edge.BaseURL != "" && env["COLLECTOR_EDGE__TOKEN"] != sim.EdgeToken {
			t.Errorf("compose.yaml: %s's COLLECTOR_EDGE__TOKEN is not the simulator's edge token", name)
		}
		_, port, _ := net.SplitHostPort(cfg.Metrics.Listen)
		if host, _, _ := net.SplitHostPort(cfg.Metrics.Listen); host != "0.0.0.0" {
			t.Errorf("%s: metrics.listen %s is not reachable from Prometheus", cfgSrc, cfg.Metrics.Listen)
		}
		if !targets[name+":"+port] {
			t.Errorf("deploy/prometheus/prometheus.yml does not scrape %s:%s", name, port)
		}
		if pg := str(s, "stop_grace_period"); pg == "" {
			t.Errorf("compose.yaml: %s has no stop_grace_period (Docker's 10s is shorter than a stop may take)", name)
		}
	}
	if collectors < 2 || !sinks[config.SinkKafka] || !sinks[config.SinkClickHouse] {
		t.Errorf("compose.yaml: want a collector into Kafka and one into ClickHouse, have %d collectors with sinks %v", collectors, sortedKeys(sinks))
	}

	// Grafana gets a Prometheus datasource and the dashboard.
	g := svc("grafana")
	dashDir := ""
	for _, m := range mounts(t, g) {
		if m.src == "deploy/grafana/collector.json" {
			dashDir = path.Dir(m.dst)
		}
	}
	if dashDir == "" {
		t.Error("compose.yaml: grafana does not mount deploy/grafana/collector.json")
	}
	var haveDS, haveProvider bool
	for _, m := range mounts(t, g) {
		switch {
		case strings.HasPrefix(m.dst, "/etc/grafana/provisioning/datasources/"):
			for _, ds := range list(yamlDoc(t, m.src), "datasources") {
				haveDS = haveDS || (str(ds, "type") == "prometheus" && strings.Contains(str(ds, "url"), "prometheus:9090"))
			}
		case strings.HasPrefix(m.dst, "/etc/grafana/provisioning/dashboards/"):
			for _, p := range list(yamlDoc(t, m.src), "providers") {
				haveProvider = haveProvider || str(p, "options.path") == dashDir
			}
		}
	}
	if !haveDS || !haveProvider {
		t.Errorf("compose.yaml: grafana provisioning: Prometheus datasource %v, dashboard provider for %s %v", haveDS, dashDir, haveProvider)
	}
}

// prometheusTargets returns the host:port targets of the collector job in
// the prometheus.yml the service mounts, and checks the rule files it loads
// are the mounted alerts.yaml.
func prometheusTargets(t *testing.T, prom map[string]any) map[string]bool {
	t.Helper()
	cfgSrc := mountedAt(t, prom, "/etc/prometheus/prometheus.yml")
	if cfgSrc != "deploy/prometheus/prometheus.yml" {
		t.Fatalf("compose.yaml: prometheus mounts %q at /etc/prometheus/prometheus.yml, want deploy/prometheus/prometheus.yml", cfgSrc)
	}
	pc := yamlDoc(t, cfgSrc)
	rules := list(pc, "rule_files")
	if len(rules) == 0 {
		t.Errorf("%s loads no rule_files", cfgSrc)
	}
	for _, r := range rules {
		if mountedAt(t, prom, str(r, "")) != "deploy/prometheus/alerts.yaml" {
			t.Errorf("%s: rule file %s is not deploy/prometheus/alerts.yaml mounted", cfgSrc, str(r, ""))
		}
	}
	targets := map[string]bool{}
	for _, sc := range list(pc, "scrape_configs") {
		if str(sc, "job_name") != "collector" {
			continue
		}
		if p := str(sc, "metrics_path"); p != "" && p != "/metrics" {
			t.Errorf("%s: metrics_path %s", cfgSrc, p)
		}
		for _, s := range list(sc, "static_configs") {
			for _, tg := range list(s, "targets") {
				targets[str(tg, "")] = true
			}
			for l := range mapAt(s, "labels") {
				if slices.Contains([]string{"sink", "source", "account", "functionality", "kind", "reason", "status"}, l) {
					t.Errorf("%s: target label %q clashes with a collector label", cfgSrc, l)
				}
			}
		}
	}
	if len(targets) == 0 {
		t.Errorf("%s: no scrape job named collector (the alert rules select job=\"collector\")", cfgSrc)
	}
	return targets
}
