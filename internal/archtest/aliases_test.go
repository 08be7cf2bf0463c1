package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// STYLE.md item 17: no type is re-exported from another package of the
// module (type X = other.Y) to save its callers an edit; a value that
// crosses a wall is one type, named by its own package at every use.
func TestNoTypeIsReExportedFromAnotherPackage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		found = append(found, moduleAliases(rel, src)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range found {
		t.Error(v)
	}
}

// moduleAliases lists the type aliases of f whose target is a type of
// another package of the module.
func moduleAliases(rel string, f *ast.File) []string {
	imports := map[string]bool{} // names under which f imports a package of the module
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if p != module && !strings.HasPrefix(p, module+"/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = true
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if !ts.Assign.IsValid() {
				continue
			}
			typ := ts.Type
			if ix, ok := typ.(*ast.IndexExpr); ok {
				typ = ix.X
			}
			if sel, ok := typ.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] {
					out = append(out, rel+": type "+ts.Name.Name+" = "+x.Name+"."+sel.Sel.Name+": use "+x.Name+"."+sel.Sel.Name+" where it is used")
				}
			}
		}
	}
	return out
}

// The rule finds an alias of a module type and lets a local alias or one
// of a standard type be.
func TestAliasRuleCatchesAnAlias(t *testing.T) {
	t.Parallel()
	src := `package source
import (
	"time"
	"github.com/svcexport/collector/internal/window"
	w2 "github.com/svcexport/collector/internal/window"
)
type Limits = window.Limits
type (
	L2 = w2.Limits
	local = int
	D = time.Duration
)
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := moduleAliases("x.go", f); len(got) != 2 {
		t.Errorf("found %q, want the two aliases of window.Limits", got)
	}
}
