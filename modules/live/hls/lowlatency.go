package hls

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Low-latency HLS (RFC 8216bis, Apple's LL-HLS): every segment is also
// published as it grows, in partial segments ("parts") of about
// PartDuration. A part is a small transport stream file of its own
// (seg-000123-p2.ts), byte for byte the slice of its segment's file: each
// part opens with PAT and PMT, so the segment, their concatenation, plays
// unchanged for players that ignore the LL tags. With Options.Files the
// parts and the playlists that list them live in Files only (a server's
// memory); without, a part's file is written in place, without the
// rename of a temporary file: while its stream is live, a server sends it
// only once Live says it is published.

// DefaultPartDuration is the nominal length of a part: a sixth of the
// default segment, so the 2 s segments hold six parts.
const DefaultPartDuration = time.Second / 3

// partTargetOf is the EXT-X-PART-INF PART-TARGET announced for parts cut
// every partLen ticks: parts are cut on the first frame at or after each
// nominal boundary of their segment, so one may run up to a frame past it;
// a tenth of slack covers 24–60 fps video and AAC frames, and a part that
// would outgrow it is cut early.
func partTargetOf(partLen int64) int64 { return partLen + partLen/10 }

// partHoldBackOf is PART-HOLD-BACK: three part targets as announced (to
// the 10 µs), rounded up to the millisecond, what RFC 8216bis recommends
// (twice is its minimum).
func partHoldBackOf(partTarget int64) float64 {
	announced, _ := strconv.ParseFloat(formatSeconds(partTarget), 64)
	return math.Ceil(math.Round(3*announced*1e5)/100) / 1000
}

// partSegments is how many of the last segments keep their EXT-X-PART
// tags: those within three target durations of the live edge, as RFC
// 8216bis (6.2.2) suggests.
const partSegments = 3

// Part describes one published partial segment.
type Part struct {
	File        string
	Duration    float64 // seconds
	Independent bool    // begins with a keyframe (or is audio)
}

// partFile is the file name of part idx of a segment of a rendition.
func partFile(rendition string, seq uint64, idx int) string {
	return strings.TrimSuffix(segmentFile(rendition, seq), ".ts") + "-p" + strconv.Itoa(idx) + ".ts"
}

// ParsePartFile reads a part's file name back: its rendition, segment
// sequence number and index. ok is false for any other name.
func ParsePartFile(name string) (rendition string, seq uint64, idx int, ok bool) {
	base, found := strings.CutSuffix(name, ".ts")
	if !found {
		return "", 0, 0, false
	}
	switch {
	case strings.HasPrefix(base, "seg-"):
		rendition, base = RenditionAV, base[len("seg-"):]
	case strings.HasPrefix(base, "audio-"):
		rendition, base = RenditionAudio, base[len("audio-"):]
	default:
		name, rest, found := strings.Cut(base, "-")
		if !found || !IsRung(name) {
			return "", 0, 0, false
		}
		rendition, base = name, rest
	}
	num, part, found := strings.Cut(base, "-p")
	if !found || len(num) < 6 || len(num) > 20 || len(part) == 0 || len(part) > 4 || !digits(num) || !digits(part) {
		return "", 0, 0, false
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", 0, 0, false
	}
	idx, _ = strconv.Atoi(part)
	if partFile(rendition, seq, idx) != name {
		return "", 0, 0, false // not canonical (leading zeros in the index)
	}
	return rendition, seq, idx, true
}

// PartSegment is the file name of the segment whose bytes a part (named
// file) is a slice of, with the part's index in it.
func PartSegment(file string) (segment string, idx int, ok bool) {
	rendition, seq, idx, ok := ParsePartFile(file)
	if !ok {
		return "", 0, false
	}
	return segmentFile(rendition, seq), idx, true
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// PlaylistOf is the live playlist of a rendition's segments and parts.
func PlaylistOf(rendition string) string {
	switch {
	case rendition == RenditionAudio:
		return PlaylistAudio
	case IsRung(rendition):
		return rendition + ".m3u8"
	}
	return PlaylistAV
}

// Errors of Live.Await, for the HTTP answers RFC 8216bis (6.2.5.2) asks.
var (
	// ErrTooFar: the request names a segment or part too far past the
	// live edge (400 Bad Request).
	ErrTooFar = errors.New("hls: _HLS_msn or _HLS_part too far ahead of the playlist")
	// ErrNotReady: it did not appear within three target durations (503).
	ErrNotReady = errors.New("hls: the requested segment or part did not appear in time")
	// ErrGone: the playlist's rendition was removed (a ladder's rung
	// dropped, Rung.Close) and will not be written again (404).
	ErrGone = errors.New("hls: the playlist's rendition was removed")
)

// Position is how far a live playlist has got.
type Position struct {
	// Segments is the number of the next full segment: those below it
	// are complete in the playlist.
	Segments uint64
	// MSN and Part name the newest published part; Part is -1 before
	// the first.
	MSN  uint64
	Part int
	// Target is the playlist's EXT-X-TARGETDURATION and PartTarget its
	// PART-TARGET, in seconds.
	Target     int
	PartTarget float64
	// Published is when Live recorded this position (set by Live).
	Published time.Time
}

// has reports whether the playlist holds segment msn (part < 0) or part
// part of segment msn or any later part.
func (p Position) has(msn uint64, part int) bool {
	if part < 0 {
		return p.Segments > msn
	}
	if p.Part < 0 {
		return false
	}
	return p.MSN > msn || p.MSN == msn && p.Part >= part
}

// tooFar applies RFC 8216bis's limits: a segment more than two past the
// last one, or a part more than the Advance Part Limit (three divided by
// the part target, or three) past the last part.
func (p Position) tooFar(msn uint64, part int) bool {
	last := int64(p.Segments) - 1 // may be -1 before the first segment
	if p.Part >= 0 && int64(p.MSN) > last {
		last = int64(p.MSN)
	}
	if int64(msn) > last+2 {
		return true
	}
	if part < 0 || p.Part < 0 {
		return false
	}
	limit := 3
	if p.PartTarget > 0 && p.PartTarget < 1 {
		limit = int(3 / p.PartTarget)
	}
	switch {
	case msn < p.MSN:
		return false
	case msn == p.MSN:
		return part-p.Part > limit
	default: // parts of a later segment count from its start
		return part >= limit
	}
}

// Live follows a stream's live playlists so that requests for what is not
// there yet can wait for it: blocking playlist reloads (_HLS_msn,
// _HLS_part) and requests for the part a playlist hints. A Packager given
// one in Options reports every playlist it writes; one Live may outlive
// Packagers (a publisher that reconnects). It is safe for concurrent use.
//
// A publication wakes every waiter of its playlist at once (hundreds, for
// a show with a crowd): each then reads the new position without a lock
// (one held by a thread the system preempted would stall them all), from
// an immutable version of the playlist's state.
type Live struct {
	mu sync.Mutex // serializes the creation of lists
	// lists is copied on write: a playlist is added once, read on
	// every request.
	lists atomic.Pointer[map[string]*liveList]
}

// liveList is one playlist's state: its current version, replaced whole
// at each publication.
type liveList struct {
	cur atomic.Pointer[listVersion]
	// waiting counts the requests waiting on it now.
	waiting atomic.Int32
}

// listVersion is a playlist's position as published, and the channel the
// next publication closes: the waiters of one rendition are not woken by
// another's parts.
type listVersion struct {
	p       Position
	started bool // a position was published
	gone    bool // the rendition was removed (retire) since
	next    chan struct{}
}

// NewLive returns an empty Live.
func NewLive() *Live {
	l := &Live{}
	l.lists.Store(&map[string]*liveList{})
	return l
}

// list returns the playlist's state, creating it (unstarted) if need be.
func (l *Live) list(playlist string) *liveList {
	if ll := (*l.lists.Load())[playlist]; ll != nil {
		return ll
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.lists.Load()
	if ll := old[playlist]; ll != nil {
		return ll
	}
	ll := &liveList{}
	ll.cur.Store(&listVersion{next: make(chan struct{})})
	lists := make(map[string]*liveList, len(old)+1)
	for k, v := range old {
		lists[k] = v
	}
	lists[playlist] = ll
	l.lists.Store(&lists)
	return ll
}

// publish records a playlist's new position and wakes its waiters.
func (l *Live) publish(playlist string, p Position) {
	if l == nil {
		return
	}
	p.Published = time.Now()
	// Each version is swapped out once, so its channel is closed once
	// (a reconnecting publisher's packager may overlap its predecessor).
	old := l.list(playlist).cur.Swap(&listVersion{p: p, started: true, next: make(chan struct{})})
	close(old.next)
}

// retire marks a playlist whose rendition was removed and wakes its
// waiters: they, and every request after them, get ErrGone rather than
// waiting for what will not come. A later publication of the playlist
// (a rung of that height back, after its publisher reconnected) lifts it.
func (l *Live) retire(playlist string) {
	if l == nil {
		return
	}
	ll := l.list(playlist)
	for {
		old := ll.cur.Load()
		if old.gone {
			return
		}
		// Compared and swapped, not swapped: a publication in between
		// (another Packager's) keeps its own version, closed once.
		if ll.cur.CompareAndSwap(old, &listVersion{p: old.p, started: old.started, gone: true, next: make(chan struct{})}) {
			close(old.next)
			return
		}
	}
}

// Gone reports whether a live playlist's rendition was removed (see
// ErrGone) and the playlist not published since.
func (l *Live) Gone(playlist string) bool {
	ll := (*l.lists.Load())[playlist]
	return ll != nil && ll.cur.Load().gone
}

// Position reports how far a live playlist has got; ok is false before
// its first segment or part.
func (l *Live) Position(playlist string) (p Position, ok bool) {
	ll := (*l.lists.Load())[playlist]
	if ll == nil {
		return Position{}, false
	}
	v := ll.cur.Load()
	return v.p, v.started
}

// Await returns once the playlist holds segment msn (part < 0) or part
// part of it (or anything later), waiting at most three target durations:
// ErrNotReady after that, ErrTooFar at once for a request too far ahead,
// ErrGone at once, or as soon as it happens, for a playlist whose
// rendition was removed, and the context's error if it ends first. A
// playlist not yet started waits like one that has not reached msn.
func (l *Live) Await(ctx context.Context, playlist string, msn uint64, part int) error {
	_, _, err := l.AwaitPosition(ctx, playlist, msn, part)
	return err
}

// AwaitPosition is Await that also returns the playlist's position that
// answered it and whether it had to wait for it: when it waited, the
// position's Published is the moment what it asked for appeared (or, for
// a waiter slower than the next part, a later one).
func (l *Live) AwaitPosition(ctx context.Context, playlist string, msn uint64, part int) (Position, bool, error) {
	ll := l.list(playlist)
	v := ll.cur.Load()
	if v.gone {
		return v.p, false, ErrGone
	}
	target := DefaultSegmentDuration
	if v.started {
		if v.p.tooFar(msn, part) {
			return v.p, false, ErrTooFar
		}
		if v.p.has(msn, part) {
			return v.p, false, nil
		}
		target = time.Duration(v.p.Target) * time.Second
	}
	ll.waiting.Add(1)
	defer ll.waiting.Add(-1)
	timer := time.NewTimer(3 * target)
	defer timer.Stop()
	for {
		select {
		case <-v.next:
		case <-timer.C:
			return v.p, true, ErrNotReady
		case <-ctx.Done():
			return v.p, true, ctx.Err()
		}
		switch v = ll.cur.Load(); {
		case v.gone:
			return v.p, true, ErrGone
		case v.started && v.p.has(msn, part):
			return v.p, true, nil
		}
	}
}

// PartPublished reports whether the part named file is in its live
// playlist. A Packager writes a part's file in place before it publishes
// it, so a part file that exists may still be incomplete until then; the
// part's bytes are in its segment's file by then too.
func (l *Live) PartPublished(file string) bool {
	rendition, seq, idx, ok := ParsePartFile(file)
	if !ok {
		return false
	}
	p, started := l.Position(PlaylistOf(rendition))
	return started && p.has(seq, idx)
}

// AwaitPart returns once the part named file is published, when it is the
// part a playlist hints (EXT-X-PRELOAD-HINT) or one already published;
// ErrTooFar for a part further ahead or a file that is no part.
func (l *Live) AwaitPart(ctx context.Context, file string) error {
	rendition, seq, idx, ok := ParsePartFile(file)
	if !ok {
		return ErrTooFar
	}
	list := PlaylistOf(rendition)
	p, started := l.Position(list)
	if !started {
		return ErrTooFar
	}
	if !p.has(seq, idx) && !p.hintable(seq, idx) {
		return ErrTooFar
	}
	return l.Await(ctx, list, seq, idx)
}

// hintable tells whether a playlist may hint part idx of segment seq while
// the newest published position is p: the next part (of the segment being
// written, or the first of the next segment) or the one after it. A
// playlist is written, to disk or to memory, before its position is
// published, so for a moment a player can read a hint one part ahead of p
// (CI saw a 404 for a hinted part 33 µs after the playlist that hinted it).
// Further ahead is refused: a held request is for what comes next.
func (p Position) hintable(seq uint64, idx int) bool {
	switch {
	case p.Part < 0:
		return seq == p.Segments && idx <= 1
	case seq == p.MSN:
		return idx == p.Part+1 || idx == p.Part+2
	case seq == p.MSN+1:
		return idx <= 1
	}
	return false
}

// formatSeconds writes a duration in 90 kHz ticks as seconds, rounded
// up to 10 µs so that no part is longer than the PART-TARGET written so.
func formatSeconds(ticks int64) string {
	return strconv.FormatFloat(math.Ceil(float64(ticks)*100000/90000)/100000, 'f', 5, 64)
}

// appendTag appends the part's EXT-X-PART line.
func (p Part) appendTag(b []byte) []byte {
	b = append(b, "#EXT-X-PART:DURATION="...)
	b = strconv.AppendFloat(b, p.Duration, 'f', 5, 64)
	b = append(b, ",URI="...)
	b = strconv.AppendQuote(b, p.File)
	if p.Independent {
		b = append(b, ",INDEPENDENT=YES"...)
	}
	return append(b, '\n')
}
