package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/svcexport/collector/internal/testinfra/harness"
)

// long enables the benchmarks that take minutes (10 million rows):
//
//	go test -run '^$' -bench Memory -benchtime 1x ./internal/bench/ -args -long
var long = flag.Bool("long", false, "also run the long benchmarks (BenchmarkMemory/rows=10M)")

// TestMain runs the package under the harness, which builds the collector
// binary when a benchmark first asks for it, so that a plain `go test
// ./...` pays nothing for this package.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
