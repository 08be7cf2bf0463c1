package e2e

import (
	"os"
	"testing"

	"github.com/svcexport/collector/internal/testinfra/harness"
)

// TestMain builds the collector once for the package (on first use) and
// checks that no test leaves goroutines behind.
func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.CheckLeaks())) }
