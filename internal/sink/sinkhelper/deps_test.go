package sinkhelper_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsStayBelowTheSinks holds the package boundary: every sink
// imports the helper, so the helper knows records, the sink seam and the
// cursor's record key (sink.Held; cursor knows window) and nothing of any
// sink, source, checkpoint or pipeline.
func TestImportsStayBelowTheSinks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const mod = "github.com/svcexport/collector/internal/"
	for _, dep := range strings.Fields(string(out)) {
		rest, ours := strings.CutPrefix(dep, mod)
		if ours && rest != "record" && rest != "sink" && rest != "sink/sinkhelper" && rest != "cursor" && rest != "window" {
			t.Errorf("package sinkhelper depends on %s", dep)
		}
	}
}
