package source

import (
	"go/build"
	"strings"
	"testing"
)

// STYLE item 1: the source never imports the sinks, the checkpoint or the
// pipeline; it hands pages on through Emit.
func TestDeps_SourceNeverImportsSinkCheckpointOrPipeline(t *testing.T) {
	const mod = "github.com/svcexport/collector/"
	seen := map[string]bool{}
	var walk func(path, dir string)
	walk = func(path, dir string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			rel := strings.TrimPrefix(imp, mod)
			for _, bad := range []string{"internal/sink", "internal/checkpoint", "internal/pipeline", "internal/config", "cmd/"} {
				if strings.HasPrefix(rel, bad) {
					t.Errorf("%s imports %s", path, imp)
				}
			}
			walk(imp, "../../"+rel)
		}
	}
	walk(mod+"internal/source", ".")
}
