package stats

import (
	"context"
	"fmt"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/svgchart"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// The console's dashboard charts: live viewers across the instance over
// the last 24 h, shows and sign-ups per day over the last 30 days, and
// this node's CPU and memory over the last 24 h.
const (
	viewersSpan = 24 * time.Hour
	dailySpan   = 30 // days
)

// AdminCharts draws the dashboard's charts.
func (m *Module) AdminCharts(ctx context.Context) ([]app.AdminChart, error) {
	now := time.Now().UTC()
	viewers, err := m.instanceViewers(ctx, now.Add(-viewersSpan))
	if err != nil {
		return nil, err
	}
	created, signups, err := m.daily(ctx, now)
	if err != nil {
		return nil, err
	}
	var cpu, mem []svgchart.Point
	for _, s := range m.process.list() {
		cpu = append(cpu, svgchart.Point{T: s.t, V: s.cpu})
		mem = append(mem, svgchart.Point{T: s.t, V: s.memMiB})
	}
	return []app.AdminChart{
		{Order: 10, Chart: svgchart.Chart{ID: "viewers", Title: "Live viewers, last 24 h", Unit: "viewers",
			Series: []svgchart.Series{{Name: "Viewers", Points: viewers}}}},
		{Order: 20, Chart: svgchart.Chart{ID: "daily", Title: "Shows and sign-ups per day, last 30 days", Daily: true,
			Series: []svgchart.Series{{Name: "Shows created", Points: created}, {Name: "Sign-ups", Points: signups}}}},
		{Order: 30, Chart: svgchart.Chart{ID: "cpu", Title: "CPU of this node, last 24 h", Unit: "% of one core",
			Series: []svgchart.Series{{Name: "CPU", Points: cpu}}}},
		{Order: 40, Chart: svgchart.Chart{ID: "memory", Title: "Memory of this node, last 24 h", Unit: "MiB resident",
			Series: []svgchart.Series{{Name: "Memory", Points: mem}}}},
	}, nil
}

// instanceViewers sums the viewers of every show per sampling tick (the
// aligned points: a publication's first point is at its own time).
func (m *Module) instanceViewers(ctx context.Context, since time.Time) ([]svgchart.Point, error) {
	var rows []struct {
		T       time.Time `bun:"t"`
		Viewers int       `bun:"viewers"`
	}
	err := m.core.DB.NewSelect().Model((*Point)(nil)).
		ColumnExpr("t").ColumnExpr("SUM(viewers) AS viewers").
		Where("aligned = ?", true).Where("t >= ?", since).Group("t").Order("t").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("stats: instance viewers: %w", err)
	}
	out := make([]svgchart.Point, len(rows))
	for i, r := range rows {
		out[i] = svgchart.Point{T: r.T, V: float64(r.Viewers)}
	}
	return out, nil
}

// daily counts the shows created and the users who signed up on each of
// the last dailySpan days (UTC), today included.
func (m *Module) daily(ctx context.Context, now time.Time) (created, signups []svgchart.Point, err error) {
	first := now.Truncate(24*time.Hour).AddDate(0, 0, -(dailySpan - 1))
	count := func(model any, what string) ([]svgchart.Point, error) {
		var times []time.Time
		if err := m.core.DB.NewSelect().Model(model).Column("created_at").Where("created_at >= ?", first).Scan(ctx, &times); err != nil {
			return nil, fmt.Errorf("stats: %s per day: %w", what, err)
		}
		per := make([]int, dailySpan)
		for _, t := range times {
			if d := int(t.UTC().Sub(first) / (24 * time.Hour)); d >= 0 && d < dailySpan {
				per[d]++
			}
		}
		out := make([]svgchart.Point, dailySpan)
		for d, n := range per {
			out[d] = svgchart.Point{T: first.AddDate(0, 0, d), V: float64(n)}
		}
		return out, nil
	}
	if created, err = count((*shows.Show)(nil), "shows"); err != nil {
		return nil, nil, err
	}
	if signups, err = count((*users.User)(nil), "sign-ups"); err != nil {
		return nil, nil, err
	}
	return created, signups, nil
}
