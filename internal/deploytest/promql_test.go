package deploytest

import (
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
func TestEveryRuleAndPanelQueryIsValidPromQL(t *testing.T) {
	exprs := map[string]string{} // where -> expression
	for _, r := range alertRules(t) {
		exprs["alert "+str(r, "alert")] = str(r, "expr")
	}
	for _, pn := range dashboardPanels(dashboard(t)) {
		for _, tg := range list(pn, "targets") {
			exprs["panel "+str(pn, "title")+" "+str(tg, "refId")] = grafanaVars.Replace(str(tg, "expr"))
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
