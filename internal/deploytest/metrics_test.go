package deploytest

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/stdout"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/telemetry"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// family is a metric family the collector registers.
type family struct {
	histogram bool
	labels    map[string]bool
	scraped   bool // seen in the running demo's /metrics
}

// Labels Prometheus adds to every scraped series.
var targetLabels = map[string]bool{"job": true, "instance": true}

func TestDashboardAndAlertsUseOnlyMetricsTheCollectorRegisters(t *testing.T) {
	fams := scrapeDemo(t)
	registered(t, fams)

	uses := map[string][]string{} // expression -> where
	dash := dashboard(t)
	for _, p := range dashboardPanels(dash) {
		for _, tg := range list(p, "targets") {
			uses[str(tg, "expr")] = append(uses[str(tg, "expr")], "dashboard panel "+str(p, "title"))
		}
	}
	for _, v := range list(dash, "templating.list") {
		if q := str(v, "definition"); q != "" {
			uses[q] = append(uses[q], "dashboard variable "+str(v, "name"))
		}
	}
	for _, r := range alertRules(t) {
		uses[str(r, "expr")] = append(uses[str(r, "expr")], "alert "+str(r, "alert"))
	}
	if len(uses) < 20 {
		t.Fatalf("only %d expressions found in the dashboard and the alert rules", len(uses))
	}
	var unscraped []string
	for expr, where := range uses {
		for _, ref := range metricRefs(expr) {
			f, name := lookup(fams, ref.name)
			if f == nil {
				t.Errorf("%s: metric %q is not registered by the collector (expression %q)", where[0], ref.name, expr)
				continue
			}
			if !f.scraped {
				unscraped = append(unscraped, name)
			}
			for _, l := range ref.labels {
				if !f.labels[l] && !targetLabels[l] && !(f.histogram && l == "le") {
					t.Errorf("%s: %s has no label %q (labels: %v) in %q", where[0], name, l, sortedKeys(f.labels), expr)
				}
			}
		}
		for _, l := range groupingLabels(expr) {
			ok := targetLabels[l] || l == "le"
			for _, ref := range metricRefs(expr) {
				if f, _ := lookup(fams, ref.name); f != nil && f.labels[l] {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: groups by %q, a label none of its metrics has: %q", where[0], l, expr)
			}
		}
	}
	sort.Strings(unscraped)
	t.Logf("used, registered, but not in the demo's scrape (series appear on an event or with another sink): %v", compact(unscraped))
}

func compact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// lookup finds the family of a name as used in PromQL: histograms are
// used through their _bucket, _sum and _count series.
func lookup(fams map[string]*family, name string) (*family, string) {
	if name == "up" {
		return &family{labels: map[string]bool{}, scraped: true}, name
	}
	if f := fams[name]; f != nil {
		return f, name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if f := fams[base]; f != nil && f.histogram {
				return f, base
			}
		}
	}
	return nil, name
}

type metricRef struct {
	name   string
	labels []string
}

var (
	metricRe   = regexp.MustCompile(`\b((?:collector|go|process|promhttp)_[a-zA-Z0-9_]+|up)\b(\{[^}]*\})?`)
	labelRe    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	groupingRe = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
	quotedRe   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// metricRefs returns the metric names an expression selects, with the label
// names of their selectors. Label values and template text (quoted) are
// ignored.
func metricRefs(expr string) []metricRef {
	var out []metricRef
	for _, m := range metricRe.FindAllStringSubmatch(expr, -1) {
		r := metricRef{name: m[1]}
		if m[2] != "" {
			for _, l := range labelRe.FindAllStringSubmatch(quotedRe.ReplaceAllString(m[2], `""`), -1) {
				r.labels = append(r.labels, l[1])
			}
		}
		out = append(out, r)
	}
	return out
}

// groupingLabels returns the labels of by (...), on (...) and the like.
func groupingLabels(expr string) []string {
	var out []string
	for _, m := range groupingRe.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// scrapeDemo runs the release binary on configs/demo.yaml (metrics on a free
// port, data in a temporary directory), scrapes /metrics once the progress
// gauges are out, checks /healthz and /readyz, stops it with SIGTERM and
// returns the families it served.
func scrapeDemo(t *testing.T) map[string]*family {
	t.Helper()
	bin := releaseBinary(t)
	dir := t.TempDir()
	addr := harness.FreeAddr(t)
	cmd := exec.Command(bin, "run", "--config", filepath.Join(root(t), "configs", "demo.yaml"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"COLLECTOR_METRICS__LISTEN="+addr,
		"COLLECTOR_CHECKPOINT__PATH="+filepath.Join(dir, "data", "checkpoint.db"),
		"COLLECTOR_SINK__FILE__DIR="+filepath.Join(dir, "out"),
		"COLLECTOR_SOURCES__DEFAULT__START=3h", // a short backfill: the families, not the volume, matter
		"COLLECTOR_LOG__PROGRESS=1s",
	)
	p := harness.StartCommand(t, cmd)
	defer p.Kill()

	base := "http://" + addr
	var body string
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-p.Exited():
			t.Fatalf("the collector exited early (%v):\n%s", p.Err(), p.Logs())
		case <-time.After(250 * time.Millisecond):
		}
		if b, code := harness.HTTPGet(base + "/metrics"); code == http.StatusOK &&
			strings.Contains(b, "\ncollector_backfill_windows_left{") && strings.Contains(b, "\ncollector_rows_delivered_total{") {
			body = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress metrics at %s/metrics after 90s:\n%s", base, p.Logs())
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if b, code := harness.HTTPGet(base + path); code != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200 (the orchestrators probe it)", path, code, b)
		}
	}
	// /tap is off unless the configuration turns it on (issue 29 item 1):
	// the release binary refuses it, saying how to turn it on.
	if b, code := harness.HTTPGet(base + "/tap?source=dns"); code != http.StatusNotFound || !strings.Contains(b, "metrics.tap.enabled") {
		t.Errorf("GET /tap = %d %s, want 404: the tap is off by default", code, b)
	}
	p.Terminate()
	select {
	case <-p.Exited():
		if err := p.Err(); err != nil {
			t.Errorf("after SIGTERM the collector exited with %v, want 0:\n%s", err, p.Logs())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("the collector did not stop within 60s of SIGTERM")
	}
	return parseExposition(t, body)
}

// parseExposition reads the families (TYPE lines) and label names of a
// Prometheus text exposition.
func parseExposition(t *testing.T, body string) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	seriesRe := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s`)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			fams[name] = &family{histogram: typ == "histogram" || typ == "summary", labels: map[string]bool{}, scraped: true}
			continue
		}
		m := seriesRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f, name := lookup(fams, m[1])
		if f == nil {
			t.Errorf("/metrics: series %s without a TYPE line", name)
			continue
		}
		for _, l := range labelRe.FindAllStringSubmatch(quotedRe.ReplaceAllString(m[2], `""`), -1) {
			f.labels[l[1]] = true
		}
	}
	if len(fams) == 0 {
		t.Fatal("/metrics served no families")
	}
	return fams
}

// registered adds the families that the collector's packages register but
// that appear in a scrape only after an event (429s, dead letters, errors)
// or with another sink: it builds each package's metrics the way the
// application does and records their descriptions.
func registered(t *testing.T, fams map[string]*family) {
	t.Helper()
	rec := &recorder{reg: prometheus.NewRegistry(), fams: fams}
	if _, err := source.NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := api.NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := recheck.NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	pipeline.New(pipeline.DefaultConfig(), nil, nil, nil, rec, slog.New(slog.DiscardHandler), nil)
	if _, err := file.New(file.DefaultConfig(), rec, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := stdout.New(stdout.DefaultConfig(), io.Discard, rec); err != nil {
		t.Fatal(err)
	}
	kc := kafka.DefaultConfig()
	kc.Brokers = []string{"127.0.0.1:9"} // New does not connect
	if _, err := kafka.New(kc, nil, t.TempDir(), rec, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := clickhouse.New(clickhouse.DefaultConfig(), rec, nil); err != nil {
		t.Fatal(err)
	}
	// The process-level registry (runtime, process, build info).
	mfs, err := telemetry.NewRegistry("v", "c").Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		f := rec.family(mf.GetName())
		f.histogram = f.histogram || mf.GetType().String() == "HISTOGRAM" || mf.GetType().String() == "SUMMARY"
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				f.labels[lp.GetName()] = true
			}
		}
	}
}

// recorder is a prometheus.Registerer that registers on a private registry
// and records every family it is given, labels and kind included.
type recorder struct {
	reg  *prometheus.Registry
	fams map[string]*family
}

var (
	descNameRe   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabelsRe = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	descConstRe  = regexp.MustCompile(`constLabels: \{([^}]*)\}`)
)

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	histogram := false
	switch c.(type) {
	case prometheus.Histogram, *prometheus.HistogramVec, prometheus.Summary, *prometheus.SummaryVec:
		histogram = true
	}
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		s := d.String()
		m := descNameRe.FindStringSubmatch(s)
		if m == nil {
			panic("unparsable metric description " + s)
		}
		f := r.family(m[1])
		f.histogram = f.histogram || histogram
		for _, re := range []*regexp.Regexp{descLabelsRe, descConstRe} {
			if lm := re.FindStringSubmatch(s); lm != nil {
				for _, l := range strings.Split(lm[1], ",") {
					l, _, _ = strings.Cut(l, "=")
					l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")")
					if l != "" {
						f.labels[l] = true
					}
				}
			}
		}
	}
	return nil
}

func (r *recorder) family(name string) *family {
	f := r.fams[name]
	if f == nil {
		f = &family{labels: map[string]bool{}}
		r.fams[name] = f
	}
	return f
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// dashboard returns deploy/grafana/collector.json.
func dashboard(t testing.TB) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(read(t, "deploy/grafana/collector.json"), &d); err != nil {
		t.Fatalf("deploy/grafana/collector.json: %v", err)
	}
	return d
}

// dashboardPanels returns every panel that is not a row, rows' panels included.
func dashboardPanels(d map[string]any) []map[string]any {
	var out []map[string]any
	var walk func([]any)
	walk = func(ps []any) {
		for _, p := range ps {
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if str(m, "type") == "row" {
				walk(list(m, "panels"))
				continue
			}
			out = append(out, m)
		}
	}
	walk(list(d, "panels"))
	return out
}

// alertRules returns the rules of deploy/prometheus/alerts.yaml.
func alertRules(t testing.TB) []map[string]any {
	t.Helper()
	doc := yamlDoc(t, "deploy/prometheus/alerts.yaml")
	var out []map[string]any
	for _, g := range list(doc, "groups") {
		for _, r := range list(g, "rules") {
			m, ok := r.(map[string]any)
			if !ok {
				t.Fatalf("alerts.yaml: rule %v is not a mapping", r)
			}
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		t.Fatal("alerts.yaml: no rules")
	}
	return out
}
