package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/shows"
)

// TestSeedCountsAreRebuildCounts seeds a small MariaDB database as the
// benchmark seeds ten million shows and checks that the show_counts rows
// the seed counted as it wrote (seedCounts, shows.ReplaceCounts) are
// those shows.RebuildCounts computes from the tables afterwards.
func TestSeedCountsAreRebuildCounts(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		"ONAIR_DATABASE_URL": onairtest.FreshMySQL(t), "ONAIR_DATA_DIR": dir,
		"ONAIR_PUBLIC_URL": "http://127.0.0.1:1", "ONAIR_HTTP_ADDR": "127.0.0.1:0", "ONAIR_RTMP_ADDR": "127.0.0.1:0",
		"ONAIR_DOWNLOADS": "false",
	}
	cfg, err := app.LoadConfig(flag.NewFlagSet("bench", flag.ContinueOnError), nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	core, err := app.Boot(ctx, cfg, app.BootOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Close() })
	counted, err := seed(ctx, core.DB.DB, 50, 4321)
	if err != nil {
		t.Fatal(err)
	}
	if err := shows.ReplaceCounts(ctx, core.DB, counted); err != nil {
		t.Fatal(err)
	}
	read := func() map[shows.ShowCount]bool {
		var rows []shows.ShowCount
		if err := core.DB.NewSelect().Model(&rows).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		m := map[shows.ShowCount]bool{}
		for _, r := range rows {
			m[r] = true
		}
		return m
	}
	fromSeed := read()
	if err := shows.RebuildCounts(ctx, core.DB); err != nil {
		t.Fatal(err)
	}
	fromTables := read()
	var all int64
	for r := range fromTables {
		if r.TagID == 0 {
			all += r.N
		}
		if !fromSeed[r] {
			t.Errorf("RebuildCounts has %+v; the seed's counts do not", r)
		}
	}
	for r := range fromSeed {
		if !fromTables[r] {
			t.Errorf("the seed counted %+v; RebuildCounts does not", r)
		}
	}
	if all != 4321 || len(fromTables) < 20 {
		t.Errorf("RebuildCounts counts %d shows in %d rows, want 4321 shows in many rows", all, len(fromTables))
	}
}
