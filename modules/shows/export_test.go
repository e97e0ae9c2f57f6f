package shows

import "github.com/onair/onair/migrations"

// MigratePeakViewers is migration 0028, for the upgrade test.
var MigratePeakViewers = migrations.AddColumns((*Show)(nil), "peak_viewers")
