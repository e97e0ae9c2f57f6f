package shows

// MigratePeakViewers exposes migration 0028 to the upgrade test.
var MigratePeakViewers = migratePeakViewers
