package tlsconfig_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary holds the bottom floor: the package
// may be imported by any other, so it imports nothing but the standard
// library.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") && dep != "github.com/svcexport/collector/internal/tlsconfig" {
			t.Errorf("package tlsconfig depends on %s", dep)
		}
	}
}
