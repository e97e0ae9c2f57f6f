package app

import (
	"strings"
	"testing"
)

type namedModule struct{ name string }

func (m *namedModule) Name() string { return m.name }

func TestRegistryRegister(t *testing.T) {
	tests := []struct {
		name      string
		modules   []Module
		wantPanic string
		wantNames []string
	}{
		{"keeps registration order", []Module{&namedModule{"users"}, &namedModule{"shows"}, &namedModule{"chat"}}, "", []string{"users", "shows", "chat"}},
		{"empty name panics", []Module{&namedModule{""}}, "empty name", nil},
		{"duplicate name panics", []Module{&namedModule{"users"}, &namedModule{"shows"}, &namedModule{"users"}}, `"users" registered twice`, nil},
		{"nil module panics", []Module{nil}, "nil module", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			defer func() {
				got := recover()
				if tt.wantPanic == "" {
					if got != nil {
						t.Fatalf("panicked: %v", got)
					}
					return
				}
				if got == nil || !strings.Contains(got.(string), tt.wantPanic) {
					t.Fatalf("panic %v, want one containing %q", got, tt.wantPanic)
				}
			}()
			for _, m := range tt.modules {
				r.Register(m)
			}
			var names []string
			for _, m := range r.Modules() {
				names = append(names, m.Name())
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Fatalf("modules %v, want %v", names, tt.wantNames)
			}
		})
	}
}

// Each boot provisions its own copies of the registered prototypes, so two
// servers in one process never share a module's state.
func TestFreshInstances(t *testing.T) {
	proto := &namedModule{"users"}
	a, b := fresh([]Module{proto}), fresh([]Module{proto})
	if a[0] == Module(proto) || a[0] == b[0] {
		t.Fatal("fresh returned a shared instance")
	}
	if a[0].Name() != "users" {
		t.Fatalf("copy lost the prototype's fields: %q", a[0].Name())
	}
	a[0].(*namedModule).name = "changed"
	if proto.name != "users" || b[0].Name() != "users" {
		t.Fatal("changing one instance changed another")
	}
}

func TestLookup(t *testing.T) {
	users := &namedModule{"users"}
	core := &Core{Modules: []Module{users}}
	got, ok := Lookup[*namedModule](core)
	if !ok || got != users {
		t.Fatalf("Lookup = %v, %v", got, ok)
	}
}
