package app

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestAuthzMalformedLinesFailStartUp(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"p with three fields", "p, user, shows", "want p, subject, object, action"},
		{"p with five fields", "p, user, shows, read, extra", "want p, subject, object, action"},
		{"g with two fields", "g, admin", "want g, role, inherited-role"},
		{"unknown type", "x, user, shows, read", "must start with p or g"},
		{"empty field", "p, user, , read", "empty field 3"},
		{"empty line", "", "empty field 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAuthz(map[string][]string{"module shows": {"p, user, shows, read", tt.line}})
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "module shows") {
				t.Fatalf("error %q should name the module and say %q", err, tt.want)
			}
		})
	}
}

func TestAuthzDecisions(t *testing.T) {
	a, err := NewAuthz(map[string][]string{
		"module shows": {
			"p, user, shows, create",
			"p, owner, shows, update",
			"p, moderator, shows, stop",
			"p, radio, shows, create_radio",
		},
		"module users": {"p, admin, users, set_role"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		roles     []string
		relations []string
		obj, act  string
		want      bool
	}{
		{"user may create", []string{"user"}, nil, "shows", "create", true},
		{"user may not stop", []string{"user"}, nil, "shows", "stop", false},
		{"moderator may stop", []string{"user", "moderator"}, nil, "shows", "stop", true},
		{"admin inherits moderator", []string{"user", "admin"}, nil, "shows", "stop", true},
		{"moderator does not inherit admin", []string{"user", "moderator"}, nil, "users", "set_role", false},
		{"admin may set roles", []string{"user", "admin"}, nil, "users", "set_role", true},
		{"owner relation allows update", []string{"user"}, []string{"owner"}, "shows", "update", true},
		{"no relation, no update", []string{"user"}, nil, "shows", "update", false},
		{"radio role", []string{"user", "radio"}, nil, "shows", "create_radio", true},
		{"without radio role", []string{"user"}, nil, "shows", "create_radio", false},
		{"unknown object", []string{"admin"}, nil, "nothing", "stop", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Principal{UserID: 1, Roles: tt.roles}
			err := a.Can(p, tt.obj, tt.act, tt.relations...)
			if tt.want && err != nil {
				t.Fatalf("denied: %v", err)
			}
			if !tt.want {
				var apiErr *Error
				if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
					t.Fatalf("got %v, want a 403", err)
				}
			}
		})
	}
	if err := a.Can(nil, "shows", "create"); err == nil || err.(*Error).Status != http.StatusUnauthorized {
		t.Fatalf("no principal: got %v, want 401", err)
	}
}

func TestPrincipalRoles(t *testing.T) {
	p := &Principal{Roles: []string{RoleUser, RoleModerator}}
	if !p.HasRole(RoleModerator) || p.HasRole(RoleAdmin) || !p.IsStaff() {
		t.Fatal("roles misread")
	}
	if (&Principal{Roles: []string{RoleUser}}).IsStaff() {
		t.Fatal("a user is not staff")
	}
}
