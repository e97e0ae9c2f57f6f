package users

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app/events"
)

// RekeyTags is migration 0006's rekeying (with its tag merges), publishing
// TagsMerged on bus inside db.
func RekeyTags(ctx context.Context, db bun.IDB, bus *events.Bus) error {
	return rekeyTags(ctx, db, bus)
}
