package shows_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/onair/onair/modules/shows"
)

// maxServiceMethods bounds shows.Service (issue #30): the lists, the
// views, the stream keys, the tags and the images are parts of their own,
// and the service keeps the lifecycle.
const maxServiceMethods = 30

// TestServiceMethodCount counts every method declared on Service in the
// package's sources, exported or not, and the exported ones by reflection.
func TestServiceMethodCount(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok && id.Name == "Service" {
				names = append(names, fn.Name.Name)
			}
		}
	}
	if len(names) == 0 || len(names) > maxServiceMethods {
		t.Fatalf("shows.Service has %d methods, want 1..%d: %v", len(names), maxServiceMethods, names)
	}
	exported := reflect.TypeFor[*shows.Service]().NumMethod()
	if exported == 0 || exported > len(names) {
		t.Fatalf("reflection sees %d exported methods of %d declared", exported, len(names))
	}
	t.Logf("shows.Service: %d methods, %d exported", len(names), exported)
}
