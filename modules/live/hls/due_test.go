package hls

import (
	"log/slog"
	"testing"
	"time"

	"github.com/onair/onair/modules/live/streamcore"
)

// countFiles counts what a Packager publishes: each Put and Remove is an
// action a unit that was not due must never cause.
type countFiles struct{ n int }

func (c *countFiles) Put(string, []byte, time.Time) { c.n++ }
func (c *countFiles) Remove(string)                 { c.n++ }

// dueCheck is the packager's reader, asking Due before each unit as the
// core does on the source's goroutine (there with a state as fresh or
// staler, whose thresholds are lower): a unit Due said no to must leave
// Files, the segments and the live playlists as they were.
type dueCheck struct {
	t              *testing.T
	p              *Packager
	files          *countFiles
	segments       int
	due, lazy, bad int
}

func (d *dueCheck) Tracks(t streamcore.Tracks) error { return d.p.Tracks(t) }
func (d *dueCheck) Close()                           {}

func (d *dueCheck) Unit(u *streamcore.Unit) error {
	due := d.p.Due(u)
	files, segs := d.files.n, d.segments
	err := d.p.Unit(u)
	acted := d.files.n != files || d.segments != segs
	switch {
	case due:
		d.due++
	case acted:
		d.bad++
		d.t.Errorf("unit video=%v key=%v dts=%d was not due, and made the packager act", u.Video, u.Key, u.DTS)
	default:
		d.lazy++
	}
	return err
}

func TestDueCoversEveryAction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		gop    int64
		audio  bool
		jitter bool // audio timestamps jittered by up to ±25 ms, as GStreamer's flvmux sends them
	}{
		{name: "av-parts", gop: 2000, audio: true},
		{name: "av-parts-jitter", gop: 2000, audio: true, jitter: true},
		{name: "av-long-gop", gop: 6000, audio: true},
		{name: "video-only", gop: 1000},
		{name: "audio-only-stream", audio: true, jitter: true},
		{name: "audio-only-show", opts: Options{AudioOnly: true}, gop: 2000, audio: true},
		{name: "no-parts", opts: Options{PartDuration: -1}, gop: 2000, audio: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			files := &countFiles{}
			o.Files = files
			o.Now = func() time.Time { return testEpoch }
			o.Logger = slog.New(slog.DiscardHandler)
			o.noSync = true
			check := &dueCheck{t: t, files: files}
			o.OnSegment = func(Segment) { check.segments++ }
			p, err := Open(t.TempDir(), o)
			if err != nil {
				t.Fatal(err)
			}
			check.p = p
			f := &FLVFeed{Packager: p}
			f.core = streamcore.New(testEpoch, streamcore.Options{TrackWait: testTrackWait, AudioOnly: o.AudioOnly})
			f.core.AddReader(check, streamcore.ReaderOptions{Name: "hls", Essential: true})
			feedDue(t, f, 20_000, tc.gop, tc.audio, tc.jitter)
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if check.segments < 5 {
				t.Fatalf("%d segments", check.segments)
			}
			// The point of Due: most units need not wake the packager.
			if check.lazy < 2*check.due {
				t.Errorf("%d units due, %d not: the packager would be woken for most", check.due, check.lazy)
			}
			t.Logf("%d units due, %d not, %d segments", check.due, check.lazy, check.segments)
		})
	}
}

// feedDue is feed at 30 fps with 48 kHz audio, whose timestamps may be
// jittered.
func feedDue(t *testing.T, p *FLVFeed, ms, gop int64, audio, jitter bool) {
	t.Helper()
	if gop > 0 {
		if err := p.Video(0, videoSeqHeader()); err != nil {
			t.Fatal(err)
		}
	}
	if audio {
		if err := p.Audio(0, []byte{0xAF, 0, 0x11, 0x90}); err != nil { // AAC-LC, 48 kHz, stereo
			t.Fatal(err)
		}
	}
	var v, a int64
	for {
		vt := v * 1000 / 30
		at := a * 1024 * 1000 / 48000
		if jitter && a > 0 {
			at += (a*7919)%51 - 25
		}
		if (gop == 0 || vt >= ms) && (!audio || at >= ms) {
			return
		}
		if gop > 0 && vt < ms && (!audio || vt <= at) {
			if err := p.Video(vt, videoFrame(vt%gop < 33)); err != nil {
				t.Fatal(err)
			}
			v++
			continue
		}
		if err := p.Audio(max(at, 0), aacFrame()); err != nil {
			t.Fatal(err)
		}
		a++
	}
}

// growingCount is a countFiles that keeps the parts of the segment being
// written (GrowingFiles), as the live module's memory files do.
type growingCount struct{ countFiles }

func (*growingCount) Growing(string) bool { return true }

// inlineCheck asks Inline before each unit, as the core does on the
// source's goroutine: a unit Inline said yes to may end a part, never
// start or end a segment (which create and write files).
type inlineCheck struct {
	t                   *testing.T
	p                   *Packager
	segments            int
	inline, due, parted int
	parts               int // parts ended, inline or not, but at a segment's end
}

func (c *inlineCheck) Tracks(t streamcore.Tracks) error { return c.p.Tracks(t) }
func (c *inlineCheck) Close()                           {}

func (c *inlineCheck) Unit(u *streamcore.Unit) error {
	inline, due := c.p.Inline(u), c.p.Due(u)
	type state struct {
		cur   *segmentWriter
		parts int
	}
	at := func() (s [2]state) {
		for i, r := range []*rendition{c.p.av, c.p.aud} {
			if r != nil {
				s[i] = state{r.cur, len(r.curParts)}
			}
		}
		return s
	}
	before, segs := at(), c.segments
	err := c.p.Unit(u)
	after := at()
	if inline && due { // the core asks Inline of due units only
		c.inline++
		for i := range before {
			if before[i].cur != after[i].cur || c.segments != segs {
				c.t.Errorf("unit video=%v key=%v dts=%d was inline, and started or ended a segment", u.Video, u.Key, u.DTS)
			}
			if before[i].parts != after[i].parts {
				c.parted++
			}
		}
	}
	if due {
		c.due++
	}
	for i := range before {
		if before[i].cur == after[i].cur && before[i].parts != after[i].parts {
			c.parts++
		}
	}
	return err
}

// Inline lets the source package the units that end a part in memory,
// never those that start or end a segment; nothing without growing
// memory files or without parts.
func TestInlineOnlyParts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		gop     int64
		audio   bool
		jitter  bool
		growing bool
	}{
		{name: "av-parts", gop: 2000, audio: true, growing: true},
		{name: "av-parts-jitter", gop: 2000, audio: true, jitter: true, growing: true},
		{name: "av-long-gop", gop: 6000, audio: true, growing: true},
		{name: "video-only", gop: 1000, growing: true},
		{name: "audio-only-stream", audio: true, jitter: true, growing: true},
		{name: "audio-only-show", opts: Options{AudioOnly: true}, gop: 2000, audio: true, growing: true},
		{name: "no-parts", opts: Options{PartDuration: -1}, gop: 2000, audio: true, growing: true},
		{name: "files-not-growing", gop: 2000, audio: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			if tc.growing {
				o.Files = &growingCount{}
			} else {
				o.Files = &countFiles{}
			}
			o.Now = func() time.Time { return testEpoch }
			o.Logger = slog.New(slog.DiscardHandler)
			o.noSync = true
			check := &inlineCheck{t: t}
			o.OnSegment = func(Segment) { check.segments++ }
			p, err := Open(t.TempDir(), o)
			if err != nil {
				t.Fatal(err)
			}
			check.p = p
			f := &FLVFeed{Packager: p}
			f.core = streamcore.New(testEpoch, streamcore.Options{TrackWait: testTrackWait, AudioOnly: o.AudioOnly})
			f.core.AddReader(check, streamcore.ReaderOptions{Name: "hls", Essential: true})
			feedDue(t, f, 20_000, tc.gop, tc.audio, tc.jitter)
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if check.segments < 5 {
				t.Fatalf("%d segments", check.segments)
			}
			t.Logf("%d units inline (%d ended a part of %d) of %d due, %d segments", check.inline, check.parted, check.parts, check.due, check.segments)
			switch {
			case !tc.growing || o.PartDuration < 0:
				if check.inline > 0 {
					t.Errorf("%d units inline without parts in memory", check.inline)
				}
			case check.parted < 50:
				// About five parts a second for 20 s, most of them inline.
				t.Errorf("only %d parts ended inline", check.parted)
			}
		})
	}
}
