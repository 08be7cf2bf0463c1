package source

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func fmtAll(v any) string { return fmt.Sprintf("%v %+v %#v", v, v, v) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testutilValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }
