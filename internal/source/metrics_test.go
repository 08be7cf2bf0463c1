package source

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/source/catalog"
)

// series returns the series of family name in reg, by their label values
// joined with "/".
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var vals []string
			for _, l := range m.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			out[strings.Join(vals, "/")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

// A stream that fails before its first page must be visible: every series
// an alert or a panel reads exists at zero from InitStream on.
func TestInitStreamCreatesEverySeriesAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.InitStream(catalog.Spec{Name: "dns"}, "acme")
	for _, name := range []string{"collector_rows_fetched_total", "collector_pages_fetched_total", "collector_windows_split_total",
		"collector_nextpage_restarts_total"} {
		if got := series(t, reg, name); len(got) != 1 || got["acme/dns"] != 0 {
			t.Errorf("%s = %v, want one series acme/dns at 0", name, got)
		}
	}
	perr := series(t, reg, "collector_poll_errors_total")
	for _, k := range PollErrorKinds() {
		if v, ok := perr["acme/"+k+"/dns"]; !ok || v != 0 {
			t.Errorf("collector_poll_errors_total{kind=%q} = %v (present %v), want 0", k, v, ok)
		}
	}
	blocked := series(t, reg, "collector_stream_blocked")
	for _, r := range api.PermanentReasons() {
		if v, ok := blocked["acme/"+r+"/dns"]; !ok || v != 0 {
			t.Errorf("collector_stream_blocked{reason=%q} = %v (present %v), want 0", r, v, ok)
		}
	}
	m.PollError("dns", "acme", PollErrorForbidden)
	if got := series(t, reg, "collector_poll_errors_total")["acme/forbidden/dns"]; got != 1 {
		t.Errorf("after one forbidden poll error: %v, want 1", got)
	}
	var nilM *Metrics
	nilM.InitStream(catalog.Spec{Name: "dns"}, "acme") // a nil *Metrics records nothing
}

// Every kind the pollers count is one InitStream creates at zero; a new kind
// in package source must be added to PollErrorKinds, or its first error is
// invisible to increase() (a series that appears at 1).
func TestPollErrorKindsCoverWhatThePollersCount(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	// The pollers, their rechecks and errorKind.
	var files []string
	for _, dir := range []string{"."} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Name.Name == "errorKind" {
					ast.Inspect(n.Body, func(n ast.Node) bool {
						if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							found = append(found, literal(r.Results[0])...)
						}
						return true
					})
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "PollError" && len(n.Args) == 3 {
					found = append(found, literal(n.Args[2])...)
				}
			case *ast.ValueSpec:
				// cut reasons become kinds when a window cannot be split
				// further (chain.go: lost).
				for i, id := range n.Names {
					if (id.Name == "cutPageCap" || id.Name == "cutTruncated") && i < len(n.Values) {
						found = append(found, literal(n.Values[i])...)
					}
				}
			}
			return true
		})
	}
	if len(found) < 8 {
		t.Fatalf("found only %d poll error kinds in package source (%v): has errorKind moved?", len(found), found)
	}
	for _, k := range found {
		if !slices.Contains(PollErrorKinds(), k) {
			t.Errorf("package source counts poll errors of kind %q, which PollErrorKinds does not list", k)
		}
	}
}

func literal(e ast.Expr) []string {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		if s, err := strconv.Unquote(b.Value); err == nil {
			return []string{s}
		}
	}
	return nil
}
