package app

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeLayout is the API's timestamp format; timestamps are UTC.
const TimeLayout = "2006-01-02 15:04:05"

// Now is the system's current time in UTC, truncated to whole seconds
// because MariaDB's DATETIME keeps whole seconds and both databases must
// agree. It is for tests and tools outside a boot: a module reads its
// boot's clock, Core.Clock.Stamp(), which a test may move (TestOneClock
// keeps it so).
func Now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// Timestamp marshals as "YYYY-MM-DD HH:MM:SS" in UTC.
type Timestamp time.Time

func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(TimeLayout) + `"`), nil
}

func (t *Timestamp) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("timestamp must be a string")
	}
	v, err := time.ParseInLocation(TimeLayout, s, time.UTC)
	if err != nil {
		return fmt.Errorf("timestamp must be YYYY-MM-DD HH:MM:SS")
	}
	*t = Timestamp(v)
	return nil
}

// Value lets a Timestamp be used as a query argument.
func (t Timestamp) Value() (driver.Value, error) { return time.Time(t).UTC(), nil }

// ParseTimestamp reads "YYYY-MM-DD HH:MM:SS" as UTC.
func ParseTimestamp(s string) (time.Time, error) {
	return time.ParseInLocation(TimeLayout, strings.TrimSpace(s), time.UTC)
}

// ParseSince reads the from/to forms of product-decisions.md: an integer N
// (N days before now), "YYYY-MM-DD", "YYYY-MM-DD HH:MM" or
// "YYYY-MM-DD HH:MM:SS", all UTC.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 100000 {
			return time.Time{}, fmt.Errorf("days must be between 0 and 100000")
		}
		return now.AddDate(0, 0, -n), nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", TimeLayout, "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("must be a number of days, YYYY-MM-DD or YYYY-MM-DD HH:MM")
}

// Every calls f each d until ctx ends (the first call one d from now), for
// the periodic work of modules: sweeps, heartbeats, clean-ups. It returns
// when ctx ends; f gets ctx and should return promptly once it does.
func Every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}
