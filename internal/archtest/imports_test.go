package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the module the rules are about.
const module = "github.com/svcexport/collector"

// A pattern names packages by their path inside the module:
//
//	internal/source      that package
//	internal/source/...  that package and every package below it
//	cmd/*                every package one level below cmd
//	*test                every package whose last element ends in "test"
//	                     (the recording fakes: sinktest, checkpointtest)
//	std:os               a standard-library package (direct imports only)
//	.                    the module's root package (the release version)
//
// A pattern may name a package that does not exist (yet): the rules hold
// for it once it does.

// testOnly are the packages that only tests import: the shared test
// infrastructure, the fakes, and the packages that hold nothing but tests.
var testOnly = []string{"internal/testinfra/...", "*test", "internal/e2e", "internal/bench", "internal/archtest"}

// The sources: the API client (internal/api) and the pollers
// (internal/source).
var sources = []string{"internal/source/...", "internal/api/..."}

// rule is one row of the table: no package of from (but except) may import
// a package of forbidden (but allowed). direct checks the package's own
// imports; otherwise every dependency counts, however indirect.
type rule struct {
	name      string
	from      []string
	except    []string
	forbidden []string
	allowed   []string
	direct    bool
}

var rules = []rule{
	{
		name:      "the sources import no sink, checkpoint, pipeline or config",
		from:      sources,
		except:    testOnly,
		forbidden: []string{"internal/sink/...", "internal/checkpoint/...", "internal/pipeline/...", "internal/config/..."},
	},
	{
		name:      "the sinks import no source or API client",
		from:      []string{"internal/sink/..."},
		forbidden: sources,
	},
	{
		name:      "the checkpoint imports no source, API client or sink",
		from:      []string{"internal/checkpoint/..."},
		forbidden: append([]string{"internal/sink/..."}, sources...),
	},
	{
		name:      "cursor holds the values of a stream's progress: it imports no internal package but record and window",
		from:      []string{"internal/cursor"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/cursor", "internal/record/...", "internal/window/..."},
	},
	{
		name:      "clock is the one time source: it imports no internal package",
		from:      []string{"internal/clock"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/clock"},
	},
	{
		name: "cursor does no I/O: it imports no file, network or database package",
		from: []string{"internal/cursor"},
		forbidden: []string{"std:os", "std:os/exec", "std:io/fs", "std:net", "std:net/http", "std:path/filepath",
			"std:syscall", "go.etcd.io/bbolt"},
		direct: true,
	},
	{
		name:      "recheck decides, the poller asks: it imports no internal package but cursor, record and window",
		from:      []string{"internal/recheck/..."},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/recheck/...", "internal/cursor", "internal/record/...", "internal/window/..."},
	},
	{
		name:      "record imports no other internal package",
		from:      []string{"internal/record/..."},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/record/..."},
	},
	{
		name:      "tap only shows what the pipeline delivered: it imports no internal package but record, secret for its token file and suggest for its did-you-mean (no API client, no sink, no checkpoint)",
		from:      []string{"internal/tap"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/tap", "internal/record/...", "internal/secret", "internal/suggest"},
	},
	{
		name:      "suggest is a leaf: it imports no internal package",
		from:      []string{"internal/suggest"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/suggest"},
	},
	{
		name:      "window imports no internal package but record",
		from:      []string{"internal/window/..."},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/window/...", "internal/record/..."},
	},
	{
		name: "window plans without I/O: it imports no file, network or database package",
		from: []string{"internal/window/..."},
		forbidden: []string{"std:os", "std:os/exec", "std:io/fs", "std:net", "std:net/http", "std:path/filepath",
			"std:syscall", "go.etcd.io/bbolt"},
		direct: true,
	},
	{
		name:      "ocsf/ocsfjson reads and writes JSON only: it imports no internal package",
		from:      []string{"internal/ocsf/ocsfjson"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/ocsf/ocsfjson"},
	},
	{
		name:      "ocsf/ocsfrec imports no internal package but record and ocsf/ocsfjson",
		from:      []string{"internal/ocsf/ocsfrec"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/ocsf/ocsfrec", "internal/ocsf/ocsfjson", "internal/record/..."},
	},
	{
		name:      "ocsf/ocsfbase imports no internal package but ocsf/ocsfrec, ocsf/ocsfjson and record",
		from:      []string{"internal/ocsf/ocsfbase"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/ocsf/ocsfbase", "internal/ocsf/ocsfrec", "internal/ocsf/ocsfjson", "internal/record/..."},
	},
	{
		name:      "the mappings of the sources (ocsf/coremap, ocsf/edgemap) import no internal package but record and the lower ocsf layers",
		from:      []string{"internal/ocsf/coremap", "internal/ocsf/edgemap"},
		forbidden: []string{"internal/..."},
		allowed:   []string{"internal/ocsf/ocsfbase", "internal/ocsf/ocsfrec", "internal/ocsf/ocsfjson", "internal/record/..."},
	},
	{
		name:      "the OCSF mapping imports no sink: the sinks own their encoder (sink/ocsfenc)",
		from:      []string{"internal/ocsf/..."},
		forbidden: []string{"internal/sink/..."},
	},
	{
		name:      "sink/ocsfenc imports no sink but the seam and sinkhelper",
		from:      []string{"internal/sink/ocsfenc"},
		forbidden: []string{"internal/sink/..."},
		allowed:   []string{"internal/sink", "internal/sink/sinkhelper", "internal/sink/ocsfenc"},
	},
	{
		name:      "only package ocsf, its other layers and the sinks import the layers below package ocsf",
		from:      []string{"..."},
		except:    append([]string{"internal/ocsf/...", "internal/sink/..."}, testOnly...),
		forbidden: []string{"internal/ocsf/ocsfjson", "internal/ocsf/ocsfrec", "internal/ocsf/ocsfbase", "internal/ocsf/coremap", "internal/ocsf/edgemap"},
		direct:    true,
	},
	{
		name:      "verify compares and reports: it imports no source, API client, pipeline or app (asking the API is verify/apicount's)",
		from:      []string{"internal/verify"},
		forbidden: append([]string{"internal/verify/apicount", "internal/pipeline/...", "internal/app/..."}, sources...),
	},
	{
		name:      "verify/apicount reads the API only: it imports no sink, checkpoint, pipeline or app",
		from:      []string{"internal/verify/apicount"},
		forbidden: []string{"internal/sink/...", "internal/checkpoint/...", "internal/pipeline/...", "internal/app/..."},
	},
	{
		name:      "only internal/app, cmd/* and test-only packages import the simulator",
		from:      []string{"..."},
		except:    append([]string{"internal/app", "cmd/*", "internal/apisim/..."}, testOnly...),
		forbidden: []string{"internal/apisim/..."},
		direct:    true,
	},
	{
		name:      "internal/config imports no simulator",
		from:      []string{"internal/config/..."},
		forbidden: []string{"internal/apisim/..."},
	},
	{
		name:      "internal/config is imported only by cmd/*, internal/app (the body of cmd/collector's main) and tests",
		from:      []string{"..."},
		except:    append([]string{"cmd/*", "internal/app", "internal/config/..."}, testOnly...),
		forbidden: []string{"internal/config/..."},
		direct:    true,
	},
	{
		name:      "no production package imports a test-only package",
		from:      []string{"..."},
		except:    testOnly,
		forbidden: testOnly,
		direct:    true,
	},
	{
		name:      "the module's root package holds only the release version: it imports no package of the module",
		from:      []string{"."},
		forbidden: []string{"..."},
	},
}

// expectedViolation is an import that breaks a rule today and whose fix
// is not merged yet.
type expectedViolation struct{ from, to, until string }

// expectedViolations: a rule whose only violations are listed here is
// skipped with the reason instead of failing, and an entry whose import is
// gone fails the test, so that it cannot outlive its fix. Delete the entry
// when the fix is merged.
var expectedViolations = []expectedViolation{}

// pkg is what `go list -json` says of one package of the module.
type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
	rel        string // ImportPath inside the module
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			found, expected, subjects := check(r, pkgs, expectedViolations)
			if subjects == 0 {
				t.Fatalf("no package matches %v: a pattern is wrong", r.from)
			}
			for _, v := range found {
				t.Error(v)
			}
			if len(found) == 0 && len(expected) > 0 {
				t.Skipf("expected to fail until the fix is merged: %s", strings.Join(expected, "; "))
			}
		})
	}
	t.Run("the expected violations still exist", func(t *testing.T) {
		for _, e := range expectedViolations {
			if !dependsOn(pkgs, e.from, e.to) {
				t.Errorf("%s no longer imports %s: delete its entry from expectedViolations", e.from, e.to)
			}
		}
	})
	t.Run("no package is named util or common", func(t *testing.T) {
		for _, v := range badNames(pkgs) {
			t.Error(v)
		}
	})
	t.Run("only pipeline, app and cmd/* import a source, a sink and the checkpoint together", func(t *testing.T) {
		for _, v := range wiring(pkgs) {
			t.Error(v)
		}
	})
}

// Every row finds a violation in a module that breaks it: a rule that
// could not fail would hold nothing.
func TestEveryRuleCatchesItsViolation(t *testing.T) {
	t.Parallel()
	fake := func(rel string, imports []string, deps ...string) pkg {
		full := func(l []string) []string {
			var out []string
			for _, i := range l {
				if strings.HasPrefix(i, "internal/") || strings.HasPrefix(i, "cmd/") {
					i = module + "/" + i
				}
				out = append(out, i)
			}
			return out
		}
		return pkg{ImportPath: module + "/" + rel, Name: path.Base(rel), rel: rel,
			Imports: full(imports), Deps: full(append(slices.Clone(imports), deps...))}
	}
	bad := []pkg{
		fake("internal/api", []string{"internal/sink/file"}),
		fake("internal/source/scan", nil, "internal/pipeline"),
		fake("internal/sink/file", []string{"internal/api"}),
		fake("internal/checkpoint", []string{"internal/sink"}),
		fake("internal/record", []string{"internal/window"}),
		fake("internal/window", []string{"os"}, "internal/secret"),
		fake("internal/telemetry", []string{"internal/apisim", "internal/sink/sinktest"}),
		fake("internal/config", []string{"internal/pipeline"}, "internal/apisim"),
		fake("internal/secret", []string{"internal/config", "internal/source", "internal/sink", "internal/checkpoint"}),
		fake("internal/util", nil),
		fake("internal/cursor", []string{"internal/api", "net/http"}),
		fake("internal/clock", []string{"internal/record"}),
		fake("internal/recheck", []string{"internal/checkpoint"}),
		fake("internal/tap", []string{"internal/api"}),
		fake("internal/ocsf/ocsfjson", []string{"internal/record"}),
		fake("internal/ocsf/ocsfrec", []string{"internal/ocsf"}),
		fake("internal/ocsf/ocsfbase", []string{"internal/ocsf/coremap"}),
		fake("internal/ocsf/edgemap", []string{"internal/ocsf/coremap"}),
		fake("internal/source/pagescan", []string{"internal/ocsf/ocsfjson"}),
		fake("internal/ocsf/ocsfsink", []string{"internal/sink/sinkhelper"}),
		fake("internal/sink/ocsfenc", []string{"internal/sink/stdout"}),
		fake("internal/verify", []string{"internal/verify/apicount"}, "internal/api"),
		fake("internal/verify/apicount", []string{"internal/verify"}, "internal/checkpoint"),
		fake(".", []string{"internal/config"}),
		fake("internal/suggest", []string{"internal/record"}),
	}
	for _, r := range rules {
		if found, _, _ := check(r, bad, nil); len(found) == 0 {
			t.Errorf("%q: no violation found", r.name)
		}
	}
	if found, expected, _ := check(rules[0], bad[:1], []expectedViolation{{from: "internal/api", to: "internal/sink/..."}}); len(found) != 0 || len(expected) != 1 {
		t.Errorf("an expected violation was reported as %v, %v", found, expected)
	}
	if len(badNames(bad)) != 1 {
		t.Errorf("internal/util passed as a package name")
	}
	if len(wiring(bad)) != 1 {
		t.Errorf("internal/secret wiring a source, a sink and the checkpoint passed")
	}
}

// check applies r to pkgs: the violations found, those tolerated by
// expected, and how many packages the rule was about.
func check(r rule, pkgs []pkg, expected []expectedViolation) (found, tolerated []string, subjects int) {
	for _, p := range pkgs {
		if !matchAny(r.from, p.rel) || matchAny(r.except, p.rel) {
			continue
		}
		subjects++
		imports := p.Deps
		if r.direct {
			imports = p.Imports
		}
		for _, imp := range imports {
			target, ok := inModule(imp)
			if !ok {
				if !r.direct {
					continue // std and third-party dependencies: only direct imports are looked at
				}
				target = imp
				if !strings.Contains(strings.Split(imp, "/")[0], ".") {
					target = "std:" + imp
				}
			}
			if !matchAny(r.forbidden, target) || matchAny(r.allowed, target) {
				continue
			}
			v := fmt.Sprintf("%s imports %s", p.rel, target)
			if why, ok := expectedFor(expected, p.rel, target); ok {
				tolerated = append(tolerated, v+" (until "+why+")")
				continue
			}
			found = append(found, v)
		}
	}
	return found, tolerated, subjects
}

// badNames lists the packages named util, utils or common (STYLE.md, "What
// is not there").
func badNames(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, name := range append(strings.Split(p.rel, "/"), p.Name) {
			if slices.Contains([]string{"util", "utils", "common"}, name) {
				out = append(out, fmt.Sprintf("%s (package %s): name the package after what it provides", p.rel, p.Name))
				break
			}
		}
	}
	return out
}

// wiring lists the packages other than the pipeline and the assembly that
// import a source, a sink and the checkpoint together (STYLE.md item 1:
// the pipeline is the only package importing all of them).
func wiring(pkgs []pkg) []string {
	allowed := append([]string{"internal/pipeline", "internal/app", "cmd/*"}, testOnly...)
	var out []string
	for _, p := range pkgs {
		if matchAny(allowed, p.rel) {
			continue
		}
		var src, snk, ckpt bool
		for _, imp := range p.Imports {
			rel, ok := inModule(imp)
			src = src || ok && matchAny(sources, rel)
			snk = snk || ok && match("internal/sink/...", rel)
			ckpt = ckpt || ok && match("internal/checkpoint/...", rel)
		}
		if src && snk && ckpt {
			out = append(out, p.rel+" imports a source, a sink and the checkpoint: wiring them is the pipeline's job")
		}
	}
	return out
}

// The patterns mean what the comment above says; a pattern that matched
// too much or too little would let a rule pass in vain.
func TestPatterns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, rel string
		want         bool
	}{
		{"internal/source", "internal/source", true},
		{"internal/source", "internal/sourcex", false},
		{"internal/source/...", "internal/source", true},
		{"internal/source/...", "internal/source/scan", true},
		{"internal/source/...", "internal/sourcex", false},
		{"internal/...", "internal/record", true},
		{"internal/...", "cmd/collector", false},
		{"...", "cmd/collector", true},
		{"cmd/*", "cmd/collector", true},
		{"cmd/*", "cmd/collector/x", false},
		{"cmd/*", "internal/cmd", false},
		{"*test", "internal/sink/sinktest", true},
		{"*test", "internal/sink/testdata/x", false},
		{"...", ".", true},
		{"internal/...", ".", false},
		{".", ".", true},
		{"std:os", "std:os", true},
		{"std:os", "std:os/exec", false},
		{"std:os", "os", false},
		{"go.etcd.io/bbolt", "go.etcd.io/bbolt", true},
	} {
		if got := match(c.pattern, c.rel); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.rel, got, c.want)
		}
	}
}

// listPackages runs `go list -e -json` over the module's packages.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel, ok := inModule(p.ImportPath)
		if !ok {
			t.Fatalf("go list gave %s, outside %s", p.ImportPath, module)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s (its dependencies are unknown)", rel, p.Error.Err)
		}
		p.rel = rel
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// inModule returns the path of importPath inside the module: "." for the
// module's root package (the release version, VERSION).
func inModule(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	return strings.CutPrefix(importPath, module+"/")
}

func matchAny(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, rel) })
}

func match(pattern, rel string) bool {
	switch {
	case pattern == "...":
		return rel == "." || !strings.HasPrefix(rel, "std:") && !strings.Contains(strings.Split(rel, "/")[0], ".")
	case strings.HasSuffix(pattern, "/..."):
		base := strings.TrimSuffix(pattern, "/...")
		return rel == base || strings.HasPrefix(rel, base+"/")
	case strings.HasSuffix(pattern, "/*"):
		return path.Dir(rel) == strings.TrimSuffix(pattern, "/*")
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(path.Base(rel), strings.TrimPrefix(pattern, "*")) && !strings.HasPrefix(rel, "std:")
	}
	return rel == pattern
}

// expectedFor says why from importing to is tolerated for now.
func expectedFor(expected []expectedViolation, from, to string) (string, bool) {
	for _, e := range expected {
		if match(e.from, from) && match(e.to, to) {
			return e.until, true
		}
	}
	return "", false
}

// dependsOn reports whether package from has to among its dependencies.
func dependsOn(pkgs []pkg, from, to string) bool {
	for _, p := range pkgs {
		if p.rel == from {
			return slices.Contains(p.Deps, module+"/"+to)
		}
	}
	return false
}
