package helmtest

import (
	"fmt"
	"os"
	"sort"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// TestPrintRendering prints what the chart renders, for reading, when RENDER
// is set: the name of a value set of valueSets (default, existingSecret,
// chartSecret, monitoring, extras, kafkaConfig, custom), or a values file.
//
//	RENDER=monitoring go test -count=1 -run TestPrintRendering
//	RENDER=$PWD/team-a.yaml go test -count=1 -run TestPrintRendering
func TestPrintRendering(t *testing.T) {
	which := os.Getenv("RENDER")
	if which == "" {
		t.Skip("RENDER is not set")
	}
	vals, ok := valueSets(t)[which]
	if !ok {
		v, err := chartutil.ReadValuesFile(which)
		if err != nil {
			t.Fatalf("RENDER=%s is neither a value set nor a values file: %v", which, err)
		}
		vals = v.AsMap()
	}
	r := mustRender(t, "collector", vals)
	names := make([]string, 0, len(r.manifest))
	for n := range r.manifest {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if r.manifest[n] != "" {
			fmt.Printf("---\n# Source: %s\n%s\n", n, r.manifest[n])
		}
	}
	fmt.Printf("# NOTES.txt\n%s\n", r.notes)
}
