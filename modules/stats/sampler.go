package stats

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/shows"
)

// Point is one sample of a live show: its stream's health, its viewers
// and the chat messages posted since the show's previous point.
//
// A publication's first point is taken as soon as the node ingesting the
// show sees it live (T in whole seconds, Aligned false); the next ones at
// the clock's ticks of the interval (T a multiple of it, Aligned true), so
// the aligned points of every show, sampled on any node, share their times
// and the instance's viewers are their sum per T. Seconds is the time the
// point stands for: since the show's previous point (at most the
// interval), 0 for a publication's first.
type Point struct {
	bun.BaseModel `bun:"table:show_stats,alias:ss"`

	ShowID           int64     `bun:"show_id,pk"`
	T                time.Time `bun:"t,pk"`
	Aligned          bool      `bun:"aligned,notnull"`
	Seconds          float64   `bun:"seconds,notnull"`
	Viewers          int       `bun:"viewers,notnull"`
	VideoBitrate     int       `bun:"video_bitrate,notnull"` // kb/s
	AudioBitrate     int       `bun:"audio_bitrate,notnull"` // kb/s
	FPS              float64   `bun:"fps,notnull"`
	KeyframeInterval float64   `bun:"keyframe_interval,notnull"` // s
	BehindSeconds    float64   `bun:"behind_seconds,notnull"`
	TimestampGaps    int       `bun:"timestamp_gaps,notnull"`
	ChatMessages     int       `bun:"chat_messages,notnull"`
}

// chatCounter is a module that counts a show's chat messages (chat).
type chatCounter interface {
	ChatMessages(ctx context.Context, showID int64, from, to time.Time) (int, error)
}

// followCounter is a module that counts a user's new followers (users).
type followCounter interface {
	NewFollowers(ctx context.Context, userID int64, from, to time.Time) (int, error)
}

// healthReporter is the module measuring publications (live). Its Health
// answers ok only on the node that ingests the show, so with several
// nodes each live show is sampled once, by that node.
func (m *Module) healthReporter() shows.HealthReporter {
	for _, mod := range m.core.Modules {
		if r, ok := mod.(shows.HealthReporter); ok {
			return r
		}
	}
	return nil
}

// publisherCounter is the module that ingests publications (live): how
// many publishers this node ingests now.
type publisherCounter interface {
	Streams() int
}

func (m *Module) publishers() publisherCounter {
	for _, mod := range m.core.Modules {
		if c, ok := mod.(publisherCounter); ok {
			return c
		}
	}
	return nil
}

func (m *Module) chat() chatCounter {
	for _, mod := range m.core.Modules {
		if c, ok := mod.(chatCounter); ok {
			return c
		}
	}
	return nil
}

func (m *Module) follows() followCounter {
	for _, mod := range m.core.Modules {
		if c, ok := mod.(followCounter); ok {
			return c
		}
	}
	return nil
}

// sampler is the state of the sampling loop: the last tick sampled and,
// for each show this node ingests, the time of its latest point.
type sampler struct {
	tick time.Time
	last map[int64]time.Time
}

// checkEvery is how often the loop looks for shows this node began to
// ingest (their first point) and for the next tick. It asks the live
// module first, in memory: the database is read only when this node
// ingests a show (see idle).
const checkEvery = time.Second

// sampleShows records the points due now: a first point for each show
// this node began ingesting, and at each new tick one for every show it
// ingests. A show whose publisher is away (inside the reconnect window)
// has no point meanwhile: the charts show the gap, and its return is a
// new publication with a first point.
func (m *Module) sampleShows(ctx context.Context, now time.Time) {
	hr := m.healthReporter()
	if hr == nil {
		return
	}
	if m.idle(hr, now) {
		return
	}
	var ids []int64
	err := m.core.DB.NewSelect().Model((*shows.Show)(nil)).Column("id").Where("live = ?", true).Scan(ctx, &ids)
	if err != nil {
		if ctx.Err() == nil {
			m.core.Log.Warn("stats: list live shows", "err", err)
		}
		return
	}
	now = now.UTC()
	tick := now.Truncate(m.every)
	aligned := tick.After(m.sampler.tick)
	if aligned {
		m.sampler.tick = tick
	}
	chat := m.chat()
	var points []Point
	ingested := make(map[int64]bool, len(ids))
	for _, id := range ids {
		prev, seen := m.sampler.last[id]
		if !aligned && seen {
			ingested[id] = true
			continue
		}
		h, ok := hr.Health(id)
		if !ok {
			continue
		}
		ingested[id] = true
		p := Point{ShowID: id, T: now.Truncate(time.Second), Viewers: h.Viewers,
			VideoBitrate: h.VideoBitrate, AudioBitrate: h.AudioBitrate, FPS: h.FPS, KeyframeInterval: h.KeyframeInterval,
			BehindSeconds: h.BehindSeconds, TimestampGaps: h.TimestampGaps}
		if aligned {
			p.T, p.Aligned = tick, true
		}
		from := p.T.Add(-m.every)
		if seen {
			from = prev
			p.Seconds = min(p.T.Sub(prev), m.every).Seconds()
		}
		if chat != nil {
			n, err := chat.ChatMessages(ctx, id, from, p.T)
			if err != nil {
				m.core.Log.Warn("stats: count chat", "show", id, "err", err)
			}
			p.ChatMessages = n
		}
		m.sampler.last[id] = p.T
		points = append(points, p)
	}
	for id := range m.sampler.last {
		if !ingested[id] {
			delete(m.sampler.last, id)
		}
	}
	if len(points) == 0 {
		return
	}
	// Ignore: a publisher that moved between nodes within one tick may
	// be sampled twice; the first point stands.
	if _, err := m.core.DB.NewInsert().Model(&points).Ignore().Exec(ctx); err != nil && ctx.Err() == nil {
		m.core.Log.Warn("stats: record points", "shows", len(points), "err", err)
	}
}

// idle tells whether the check at now has nothing to do, without the
// database: this node ingests no show (it forgets the ones it sampled),
// or, between ticks, it ingests just the shows it already sampled.
func (m *Module) idle(hr shows.HealthReporter, now time.Time) bool {
	pc := m.publishers()
	if pc == nil {
		return false
	}
	n := pc.Streams()
	tick := now.UTC().Truncate(m.every)
	if n == 0 {
		clear(m.sampler.last)
		if tick.After(m.sampler.tick) {
			m.sampler.tick = tick
		}
		return true
	}
	if tick.After(m.sampler.tick) || n != len(m.sampler.last) {
		return false
	}
	for id := range m.sampler.last {
		if _, ok := hr.Health(id); !ok {
			return false
		}
	}
	return true
}
