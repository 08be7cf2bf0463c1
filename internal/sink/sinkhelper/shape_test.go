package sinkhelper_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSinksWriteNoLifecycleOfTheirOwn holds the helper's shape (issue 30,
// "sinks without forwarding"): a package that builds a sink on
// sinkhelper.New keeps the *Base it returns as an embedded field of its
// sink type, and that type declares none of sink.Sink's methods itself, so
// the lifecycle is written once, here. It reads the source of every
// package beside this one that calls sinkhelper.New.
func TestSinksWriteNoLifecycleOfTheirOwn(t *testing.T) {
	t.Parallel()
	lifecycle := map[string]bool{"Start": true, "Write": true, "Ready": true, "Shutdown": true}
	dirs, err := filepath.Glob(filepath.Join("..", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sinks := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || filepath.Base(dir) == "sinkhelper" {
			continue
		}
		files := parseDir(t, dir)
		if !callsNew(files) {
			continue
		}
		sinks++
		holders := typesHoldingBase(files)
		for typ, embedded := range holders {
			if !embedded {
				t.Errorf("%s.%s holds a *sinkhelper.Base in a named field; embed it", filepath.Base(dir), typ)
			}
		}
		if len(holders) == 0 {
			t.Errorf("%s calls sinkhelper.New but no type of it holds a *sinkhelper.Base", filepath.Base(dir))
		}
		for name, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if _, holds := holders[receiverType(fn)]; ok && fn.Recv != nil && lifecycle[fn.Name.Name] && holds {
					t.Errorf("%s: %s.%s is written by hand; it is the embedded sinkhelper.Base's (give the step to sinkhelper.New)",
						name, receiverType(fn), fn.Name.Name)
				}
			}
		}
	}
	if sinks < 4 { // file, stdout, kafka, clickhouse
		t.Errorf("found %d packages that build a sink on sinkhelper.New, want at least 4", sinks)
	}
}

// typesHoldingBase returns the names of the struct types of files with a
// *sinkhelper.Base field, each with whether the field is embedded.
func typesHoldingBase(files map[string]*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, field := range st.Fields.List {
				star, ok := field.Type.(*ast.StarExpr)
				if !ok {
					continue
				}
				if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Base" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "sinkhelper" {
						names[ts.Name.Name] = len(field.Names) == 0
					}
				}
			}
			return false
		})
	}
	return names
}

// receiverType is the name of fn's receiver type, without its star ("" for
// a function).
func receiverType(fn *ast.FuncDecl) string {
	if fn == nil || fn.Recv == nil {
		return ""
	}
	x := fn.Recv.List[0].Type
	if star, ok := x.(*ast.StarExpr); ok {
		x = star.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return files
}

// callsNew reports whether files call sinkhelper.New.
func callsNew(files map[string]*ast.File) bool {
	found := false
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if ok && sel.Sel.Name == "New" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "sinkhelper" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}
