package source

import (
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The simulator tests wait on the simulator's clock (next-page lives,
	// rate-limit resets, retry backoffs), not on the CPU: unless told
	// otherwise (-parallel), run more of them at once than GOMAXPROCS.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0))))
	}
	goleak.VerifyTestMain(m)
}

func fmtAll(v any) string { return fmt.Sprintf("%v %+v %#v", v, v, v) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testutilValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// gathered returns the value of the series of metric name in g with the
// labels of pairs (name, value, name, value...), a counter or a gauge; 0
// when there is none.
func gathered(t *testing.T, g prometheus.Gatherer, name string, pairs ...string) float64 {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		want[pairs[i]] = pairs[i+1]
	}
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// pageRowsSeenOf is collector_page_rows_seen of a stream.
func pageRowsSeenOf(e *env, source, account string) prometheus.Collector {
	return gaugeOf(e.apiMetric("collector_page_rows_seen", "source", source, "account", account))
}

// gaugeOf is a collector holding v, for testutilValue.
func gaugeOf(v float64) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "value"})
	g.Set(v)
	return g
}
