package helmtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// Grafana's variables, as the dashboard's queries use them, replaced by
// values PromQL can parse.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// Every alert rule's expression and every dashboard query parses as PromQL
// with Prometheus's own parser (promtool's, in Go: no install needed), so a
// typo in a rule cannot reach a Prometheus that would refuse the whole file.
// It lives in this module so that Prometheus's parser, and all it imports,
// stays out of the collector's go.mod.
func TestEveryRuleAndPanelQueryIsValidPromQL(t *testing.T) {
	exprs := map[string]string{} // where -> expression
	for _, g := range alertGroups(t) {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr.String()
		}
	}
	for _, pn := range dashboardPanels(t) {
		for _, tg := range pn.Targets {
			exprs["panel "+pn.Title+" "+tg.RefID] = grafanaVars.Replace(tg.Expr)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found", len(exprs))
	}
	for where, e := range exprs {
		expr, err := parser.ParseExpr(e)
		if err != nil {
			t.Errorf("%s: %v\n%s", where, err, e)
			continue
		}
		// An alert fires on the series its expression returns: a bare
		// scalar can never carry the labels the annotations name.
		if strings.HasPrefix(where, "alert ") && expr.Type() != parser.ValueTypeVector {
			t.Errorf("%s: expression of type %s, want a vector", where, expr.Type())
		}
	}
	if _, err := parser.ParseExpr(`sum by (source (rate(x[5m]))`); err == nil {
		t.Fatal("the parser accepts an unbalanced expression: the check above checks nothing")
	}
}

// panel is what the test reads of a Grafana panel.
type panel struct {
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a row's panels
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// dashboardPanels returns every panel of deploy/grafana/collector.json that
// is not a row, rows' panels included.
func dashboardPanels(t testing.TB) []panel {
	t.Helper()
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(read(t, "deploy/grafana/collector.json"), &d); err != nil {
		t.Fatalf("deploy/grafana/collector.json: %v", err)
	}
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}
