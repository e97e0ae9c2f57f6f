package app_test

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// modulePath is the Go module of the tree; the rules below speak of the
// packages under it by their path relative to the root ("modules/shows").
const modulePath = "github.com/onair/onair"

// testKits may import modules: they boot the whole binary's module set for
// the tests of other packages, and no production package imports them.
var testKits = map[string]bool{
	"internal/onairtest":     true,
	"internal/broadcasttest": true,
	"admin/admintest":        true,
}

// TestImportRules keeps the house's shape (docs/modules.md): the kernel
// (app), the console (admin) and the site's frame (site) know no module;
// no module imports the public pages (modules/pages), which sit on top of
// the others; the shared packages under internal/ import no module. Only the production files of
// each package count: a package's tests may boot every module.
func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	imports := localImports(t, root)
	if len(imports) < 20 || imports["app"] == nil {
		t.Fatalf("found %d packages under %s; is the test run from app/?", len(imports), root)
	}

	var broken []string
	for pkg, deps := range imports {
		for _, dep := range deps {
			if why := breaks(pkg, dep); why != "" {
				broken = append(broken, pkg+" imports "+dep+": "+why)
			}
		}
	}
	sort.Strings(broken)
	for _, b := range broken {
		t.Error(b)
	}
}

// breaks says which rule pkg importing dep breaks, or "".
func breaks(pkg, dep string) string {
	module := dep == "modules" || strings.HasPrefix(dep, "modules/")
	switch {
	case testKits[pkg]:
		return ""
	case module && under(pkg, "app"):
		return "the kernel knows no module"
	case module && under(pkg, "admin"):
		return "the console knows no module (app declares what it needs; a module provides it)"
	case module && under(pkg, "internal"):
		return "shared packages know no module"
	case module && under(pkg, "site"):
		return "the site's frame knows no module (a module draws its pages in it: app.SitePager)"
	case module && under(pkg, "migrations"):
		return "the migration runner knows no module"
	case under(dep, "modules/pages") && strings.HasPrefix(pkg, "modules/") && !under(pkg, "modules/pages"):
		return "no module imports the public pages"
	}
	return ""
}

// under tells whether pkg is dir or a package below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// localImports maps every package of the tree (relative path) to the
// packages of the tree its non-test files import, as the build sees them
// on this platform.
func localImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another Go module
			}
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		var deps []string
		for _, imp := range p.Imports {
			if imp == modulePath {
				deps = append(deps, ".")
			} else if strings.HasPrefix(imp, modulePath+"/") {
				deps = append(deps, strings.TrimPrefix(imp, modulePath+"/"))
			}
		}
		out[rel] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportRulesCatchABreak checks the checker on made-up edges, so a
// rule that silently stopped matching would show.
func TestImportRulesCatchABreak(t *testing.T) {
	for _, tc := range []struct {
		pkg, dep string
		broken   bool
	}{
		{"app", "modules/users", true},
		{"admin", "modules/users", true},
		{"internal/imaging", "modules/shows", true},
		{"migrations", "modules/shows", true},
		{"site", "modules/users", true},
		{"modules/webhooks", "site", false},
		{"modules/webhooks", "modules/pages", true},
		{"modules/pages/studio", "modules/pages", false},
		{"modules", "modules/pages", false},
		{"internal/onairtest", "modules", false},
		{"admin/admintest", "modules/users", false},
		{"modules/shows", "modules/users", false},
		{"app", "migrations", false},
	} {
		if got := breaks(tc.pkg, tc.dep) != ""; got != tc.broken {
			t.Errorf("%s -> %s: broken = %v, want %v", tc.pkg, tc.dep, got, tc.broken)
		}
	}
}

// TestOneClock keeps the time on the boot's clock (Core.Clock): no
// production file outside app reads app.Now, the system's time, so a test
// that moves a boot's clock moves it for every module of that boot.
// Tests may read app.Now; tools outside a boot build their own Clock.
func TestOneClock(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") || !(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".templ")) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if under(filepath.ToSlash(filepath.Dir(rel)), "app") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "app.Now()"); n > 0 {
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("production files read app.Now instead of the boot's Core.Clock: %v", found)
	}
}
