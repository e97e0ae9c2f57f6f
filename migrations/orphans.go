package migrations

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Ref names a column of Table holding the id of a row of Parent.
type Ref struct{ Table, Column, Parent string }

// DeleteOrphans deletes, ref by ref, the rows whose column names a Parent
// row that no longer exists: what earlier releases left where a table had
// no foreign key to cascade (bun's WithForeignKeys makes none on columns
// that are all part of the table's key). Running it again deletes nothing
// more.
func DeleteOrphans(ctx context.Context, db bun.IDB, refs ...Ref) error {
	for _, r := range refs {
		if _, err := db.NewRaw("DELETE FROM ? WHERE NOT EXISTS (SELECT 1 FROM ? WHERE ?.id = ?.?)",
			bun.Ident(r.Table), bun.Ident(r.Parent), bun.Ident(r.Parent), bun.Ident(r.Table), bun.Ident(r.Column)).Exec(ctx); err != nil {
			return fmt.Errorf("delete rows of %s whose %s is gone from %s: %w", r.Table, r.Column, r.Parent, err)
		}
	}
	return nil
}
