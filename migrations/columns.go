package migrations

import (
	"context"
	"fmt"
	"reflect"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// AddColumns adds the named columns to a model's table as the model's
// struct tags define them (type, NOT NULL, DEFAULT), each unless the table
// has it already: a fresh database has every column from CreateTables, an
// older one gets the new ones here, and the step can run again after a
// crash (MySQL commits DDL at once).
func AddColumns(model any, names ...string) func(ctx context.Context, db bun.IDB) error {
	return func(ctx context.Context, db bun.IDB) error {
		table := db.Dialect().Tables().Get(reflect.TypeOf(model))
		have, err := tableColumns(ctx, db, table.Name)
		if err != nil {
			return err
		}
		for _, name := range names {
			f, ok := table.FieldMap[name]
			if !ok {
				return fmt.Errorf("add column %s.%s: the model has no such column", table.Name, name)
			}
			if have[name] {
				continue
			}
			expr := "? " + f.CreateTableSQLType
			if f.NotNull {
				expr += " NOT NULL"
			}
			if f.SQLDefault != "" {
				expr += " DEFAULT " + f.SQLDefault
			}
			if _, err := db.NewAddColumn().Model(model).ColumnExpr(expr, bun.Ident(name)).Exec(ctx); err != nil {
				return fmt.Errorf("add column %s.%s: %w", table.Name, name, err)
			}
		}
		return nil
	}
}

// TableExists tells whether the database has the table (a step that must
// know whether an earlier one, or another module's, created it).
func TableExists(ctx context.Context, db bun.IDB, table string) (bool, error) {
	cols, err := tableColumns(ctx, db, table)
	return len(cols) > 0, err
}

// ColumnExists tells whether the table has the column.
func ColumnExists(ctx context.Context, db bun.IDB, table, column string) (bool, error) {
	cols, err := tableColumns(ctx, db, table)
	return cols[column], err
}

// Columns returns the set of a table's column names (empty when there is
// no such table).
func Columns(ctx context.Context, db bun.IDB, table string) (map[string]bool, error) {
	return tableColumns(ctx, db, table)
}

// tableColumns lists the columns a table has.
func tableColumns(ctx context.Context, db bun.IDB, table string) (map[string]bool, error) {
	var names []string
	q := db.NewRaw("SELECT name FROM pragma_table_info(?)", table)
	if db.Dialect().Name() == dialect.MySQL {
		q = db.NewRaw("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table)
	}
	if err := q.Scan(ctx, &names); err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, nil
}
