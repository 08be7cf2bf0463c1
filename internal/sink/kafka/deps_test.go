package kafka

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsStayInside holds the package boundary of STYLE.md: the sink
// knows records and the sink seam, nothing of sources, checkpoints or the
// pipeline, and no test helper leaks into the build.
func TestImportsStayInside(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, forbidden := range []string{
		"github.com/svcexport/collector/internal/source",
		"github.com/svcexport/collector/internal/checkpoint",
		"github.com/svcexport/collector/internal/pipeline",
		"github.com/svcexport/collector/internal/config",
		"github.com/svcexport/collector/internal/testinfra/kafkatest",
		"github.com/twmb/franz-go/pkg/kfake",
	} {
		for _, dep := range strings.Fields(string(out)) {
			if dep == forbidden {
				t.Errorf("package kafka depends on %s", forbidden)
			}
		}
	}
}
