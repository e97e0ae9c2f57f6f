package onairtest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// Staff creates a staff member (an admin) and returns them as the
// principal a service call takes.
func (e *Env) Staff() *app.Principal {
	e.T.Helper()
	staff, _ := e.CreateUser("Staff Admin", Role("admin"))
	return &app.Principal{UserID: staff.ID, Roles: []string{app.RoleUser, app.RoleAdmin}}
}

// ExpectNotFound fails the test unless err is the API's 404 (an
// *app.Error of that status); what names the call.
func ExpectNotFound(t testing.TB, what string, err error) {
	t.Helper()
	var apiErr *app.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("%s: %v, want a 404", what, err)
	}
}

// ExpectNoOrphans fails the test if a row of a ref's table names a row of
// its parent that is gone: the rows migrations.DeleteOrphans would delete.
func ExpectNoOrphans(t testing.TB, db bun.IDB, refs ...migrations.Ref) {
	t.Helper()
	for _, r := range refs {
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM ? WHERE NOT EXISTS (SELECT 1 FROM ? WHERE ?.id = ?.?)",
			bun.Ident(r.Table), bun.Ident(r.Parent), bun.Ident(r.Parent), bun.Ident(r.Table), bun.Ident(r.Column)).Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d rows of %s whose %s is gone from %s", n, r.Table, r.Column, r.Parent)
		}
	}
}
