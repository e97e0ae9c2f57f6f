package live_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoTypeHoldsTheModule reads the live package's source and fails for
// any type, but Module itself, with a field whose type names Module (a
// pointer, a value, a slice or map of them, a function taking or
// returning one): the parts of the live core get what they use in
// wiring (module.go), functions or interfaces, never the module.
func TestNoTypeHoldsTheModule(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok || spec.Name.Name == "Module" {
				return true
			}
			checked++
			ast.Inspect(spec.Type, func(n ast.Node) bool {
				if _, ok := n.(*ast.SelectorExpr); ok {
					return false // another package's name
				}
				if id, ok := n.(*ast.Ident); ok && id.Name == "Module" {
					t.Errorf("%s: type %s refers to the live Module", fset.Position(id.Pos()), spec.Name.Name)
				}
				return true
			})
			return false
		})
	}
	if checked < 20 {
		t.Fatalf("read only %d type declarations in %d files: is the test in modules/live?", checked, len(files))
	}
}
