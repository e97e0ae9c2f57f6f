package hls

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// renderFmt is the playlist text as render wrote it with fmt before it
// appended with strconv: the reference its output must equal byte for byte.
func renderFmt(p playlist) []byte {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n")
	if p.vod {
		b.WriteString("#EXT-X-PLAYLIST-TYPE:VOD\n")
	}
	fmt.Fprintf(&b, "#EXT-X-TARGETDURATION:%d\n", p.targetDuration)
	if p.ll != nil {
		fmt.Fprintf(&b, "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.3f\n", partHoldBackOf(p.ll.partTarget))
		fmt.Fprintf(&b, "#EXT-X-PART-INF:PART-TARGET=%s\n", formatSeconds(p.ll.partTarget))
	}
	fmt.Fprintf(&b, "#EXT-X-MEDIA-SEQUENCE:%d\n", p.mediaSequence)
	if p.discontinuity > 0 {
		fmt.Fprintf(&b, "#EXT-X-DISCONTINUITY-SEQUENCE:%d\n", p.discontinuity)
	}
	independent := len(p.segments) > 0
	for _, s := range p.segments {
		independent = independent && s.Independent
	}
	if independent {
		b.WriteString("#EXT-X-INDEPENDENT-SEGMENTS\n")
	}
	tag := func(part Part) {
		fmt.Fprintf(&b, "#EXT-X-PART:DURATION=%.5f,URI=%q", part.Duration, part.File)
		if part.Independent {
			b.WriteString(",INDEPENDENT=YES")
		}
		b.WriteByte('\n')
	}
	for i, s := range p.segments {
		if s.Discontinuity {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		if !s.ProgramDateTime.IsZero() {
			fmt.Fprintf(&b, "#EXT-X-PROGRAM-DATE-TIME:%s\n", s.ProgramDateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		if p.ll != nil && i >= len(p.segments)-partSegments {
			for _, part := range p.ll.parts[s.Sequence] {
				tag(part)
			}
		}
		fmt.Fprintf(&b, "#EXTINF:%.3f,\n%s\n", s.Duration, s.File)
	}
	if p.ll != nil {
		if p.ll.pendingDisc && len(p.ll.pending) > 0 {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		for _, part := range p.ll.pending {
			tag(part)
		}
		if p.ll.hint != "" {
			fmt.Fprintf(&b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=%q\n", p.ll.hint)
		}
		for _, r := range p.ll.reports {
			fmt.Fprintf(&b, "#EXT-X-RENDITION-REPORT:URI=%q,LAST-MSN=%d,LAST-PART=%d\n", r.uri, r.msn, r.part)
		}
	}
	if p.vod || p.ended {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	return []byte(b.String())
}

// randomPlaylist is a playlist of every shape render meets: VOD or live,
// with or without LL-HLS parts, discontinuities, program date times in
// and out of UTC, durations that round either way, and names that need
// quoting.
func randomPlaylist(r *rand.Rand) playlist {
	names := []string{"av", "audio", `we"ird`, "é\tx"}
	name := names[r.IntN(len(names))]
	p := playlist{
		targetDuration: 1 + r.IntN(10),
		mediaSequence:  r.Uint64N(1 << 40),
		discontinuity:  uint64(r.IntN(3)),
		vod:            r.IntN(4) == 0,
		ended:          r.IntN(3) == 0,
	}
	if !p.vod && r.IntN(4) > 0 {
		p.ll = &lowLatency{partTarget: int64(9000 + r.IntN(90000)), parts: map[uint64][]Part{}, pendingDisc: r.IntN(2) == 0}
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800)}
	part := func(seq uint64, i int) Part {
		return Part{File: partFile(name, seq, i), Duration: r.Float64() * 1.2, Independent: r.IntN(2) == 0}
	}
	for i := range r.IntN(12) {
		seq := p.mediaSequence + uint64(i)
		s := Segment{Sequence: seq, File: segmentFile(name, seq), Duration: float64(r.IntN(6_000_000)) / 1e6,
			Discontinuity: r.IntN(6) == 0, Independent: r.IntN(8) > 0}
		if r.IntN(5) > 0 {
			s.ProgramDateTime = time.Unix(1_700_000_000+r.Int64N(1e8), r.Int64N(1e9)).In(zones[r.IntN(2)])
		}
		p.segments = append(p.segments, s)
		if p.ll != nil {
			for j := range r.IntN(7) {
				p.ll.parts[seq] = append(p.ll.parts[seq], part(seq, j))
			}
		}
	}
	if p.ll != nil {
		next := p.mediaSequence + uint64(len(p.segments))
		for j := range r.IntN(5) {
			p.ll.pending = append(p.ll.pending, part(next, j))
		}
		if r.IntN(3) > 0 {
			p.ll.hint = partFile(name, next, len(p.ll.pending))
		}
		if r.IntN(2) == 0 {
			p.ll.reports = []renditionReport{{uri: names[r.IntN(len(names))] + ".m3u8", msn: r.Uint64N(1000), part: r.IntN(7) - 1}}
		}
	}
	return p
}

func TestRenderAsFmt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		p := randomPlaylist(r)
		if got, want := p.render(), renderFmt(p); string(got) != string(want) {
			t.Fatalf("playlist %d:\ngot:\n%s\nwant:\n%s", i, got, want)
		}
	}
}

// BenchmarkRender is a live LL-HLS playlist as a rendition renders it
// after each part: a 12 s window of 2 s segments, six parts each.
func BenchmarkRender(b *testing.B) {
	p := playlist{targetDuration: 2, mediaSequence: 100, ll: &lowLatency{partTarget: 30000, parts: map[uint64][]Part{}}}
	t0 := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	for i := range 7 {
		seq := uint64(100 + i)
		p.segments = append(p.segments, Segment{Sequence: seq, File: segmentFile("av", seq), Duration: 2.002, Independent: true,
			ProgramDateTime: t0.Add(time.Duration(i) * 2 * time.Second)})
		for j := range 6 {
			p.ll.parts[seq] = append(p.ll.parts[seq], Part{File: partFile("av", seq, j), Duration: 0.33367, Independent: j%3 == 0})
		}
	}
	p.ll.pending = p.ll.parts[106][:3]
	p.ll.hint = partFile("av", 107, 3)
	p.ll.reports = []renditionReport{{uri: "audio.m3u8", msn: 106, part: 2}}
	b.Run("afresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.render()
		}
	})
	// As a rendition renders it: the segments with parts and the pending
	// parts' tags kept from when each was added.
	kept := p
	ll := *p.ll
	kept.ll = &ll
	ll.partText = map[uint64][]byte{}
	for _, s := range p.segments {
		ll.partText[s.Sequence] = s.appendLines(nil, ll.parts[s.Sequence])
	}
	for _, part := range ll.pending {
		ll.pendingText = part.appendTag(ll.pendingText)
	}
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = kept.render()
		}
	})
}

// TestRenderKeptText: the live playlists a rendition renders from the text
// it keeps of its segments with parts and of its pending parts are those
// rendered afresh, byte for byte, as parts and segments come and go and
// when the stream ends.
func TestRenderKeptText(t *testing.T) {
	p := openTest(t, t.TempDir(), Options{Live: NewLive()})
	segmentsKept := 0
	check := func(when string) {
		t.Helper()
		for _, r := range []*rendition{p.av, p.aud} {
			kept := r.livePlaylist()
			if kept.ll == nil {
				t.Fatalf("%s, %s: no LL-HLS", when, r.name)
			}
			segmentsKept += len(kept.ll.partText)
			afresh := kept
			ll := *kept.ll
			ll.partText, ll.pendingText = nil, nil
			afresh.ll = &ll
			got, want := kept.render(), afresh.render()
			if string(got) != string(want) {
				t.Fatalf("%s, %s:\ngot:\n%s\nwant:\n%s", when, r.name, got, want)
			}
			if fmtText := renderFmt(afresh); string(want) != string(fmtText) {
				t.Fatalf("%s, %s: afresh differs from fmt:\n%s\nwant:\n%s", when, r.name, want, fmtText)
			}
		}
	}
	// Keyframes a second apart from each call's start: segments and
	// parts end at varied points of the calls.
	for i := range 16 {
		start := int64(i) * 1300
		feed(t, p, start, 1300, 1000, true)
		check(fmt.Sprintf("after %d ms", start+1300))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
	if segmentsKept == 0 {
		t.Error("no segment's text kept")
	}
}
