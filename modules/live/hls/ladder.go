package hls

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onair/onair/modules/live/flv"
)

// An adaptive bitrate ladder: besides the A/V rendition, the source copied,
// a Packager may carry rungs, lower renditions of the same stream that a
// transcoder makes (modules/live's transcoder, ffmpeg). Each rung is a
// rendition of its own, named after its height ("v360": v360.m3u8,
// v360-000012.ts, archive_v360.m3u8), with parts and blocking reloads like
// the others, written from the transcoder's goroutine while the source's
// renditions go on from theirs: a rung never delays the source.
//
// Every rung is cut where the A/V rendition was: at the keyframe the
// source began each segment with (the transcoder keeps the source's
// keyframes), with that segment's decoding time, so that segment for
// segment the variants have the same number, duration and program date
// time, and a player switches between them at any boundary. A rung's
// first segment takes the source's number; after a pause (its transcoder
// restarted) the source's segments the rung missed are listed as
// EXT-X-GAP segments, and the rung goes on after a discontinuity with the
// source's number again.
//
// The master playlists list the rungs between the source's variant and
// the audio-only one, highest first, once each has a segment; a rung
// removed (an overloaded transcoder dropping it) leaves them, and its
// live playlist is gone (Live.Gone) while what it published stays.

// rungPrefix begins the name of every rung rendition.
const rungPrefix = "v"

// RungRendition is the rendition name of the rung of that height.
func RungRendition(height int) string { return rungPrefix + strconv.Itoa(height) }

// IsRung reports whether a rendition name is a rung's.
func IsRung(rendition string) bool {
	h, ok := strings.CutPrefix(rendition, rungPrefix)
	return ok && len(h) > 0 && len(h) <= 5 && digits(h) && h[0] != '0'
}

// IsRungPlaylist reports whether a file name is a rung's live playlist.
func IsRungPlaylist(file string) bool {
	name, ok := strings.CutSuffix(file, ".m3u8")
	return ok && IsRung(name)
}

// RungHeight is the height a rung rendition is named after (0 if none).
func RungHeight(rendition string) int {
	if !IsRung(rendition) {
		return 0
	}
	h, _ := strconv.Atoi(rendition[len(rungPrefix):])
	return h
}

// ArchiveOf is the VOD playlist Finalize writes for a rendition.
func ArchiveOf(rendition string) string {
	switch {
	case rendition == RenditionAudio:
		return ArchiveAudio
	case IsRung(rendition):
		return "archive_" + rendition + ".m3u8"
	}
	return ArchiveAV
}

// ArchiveFiles lists the playlists Finalize writes for a recording of
// these segments: each rendition's VOD and ended live playlist, and the
// masters.
func ArchiveFiles(segs []Segment) []string {
	names := []string{ArchiveMasterAV, ArchiveMasterAudio}
	seen := map[string]bool{}
	for _, s := range segs {
		if !seen[s.Rendition] {
			seen[s.Rendition] = true
			names = append(names, ArchiveOf(s.Rendition), PlaylistOf(s.Rendition))
		}
	}
	return names
}

// ladder is what the renditions of a Packager share across goroutines.
type ladder struct {
	mu      sync.Mutex
	started bool
	clock   clock
	bounds  []bound // the A/V rendition's latest segment starts, oldest first
	rungs   []*Rung // in the master playlists, once they have a segment
	indexMu sync.Mutex
	board   reportBoard
}

// reportBoard holds the newest part of each live rendition of a
// Packager, for the EXT-X-RENDITION-REPORT tags by which every live
// playlist tells of the others (LL-HLS: a player switching variants asks
// the other playlist for the part it needs at once). The renditions write
// on goroutines of their own (the source's, each rung's), hence the lock.
type reportBoard struct {
	mu   sync.Mutex
	last []boardEntry // in the master playlist's order
}

type boardEntry struct {
	playlist string
	rank     int // the source's first, then the rungs highest first, the audio last
	ref      partRef
}

// Ranks of the renditions on the board.
const (
	rankAV    = math.MinInt
	rankAudio = math.MaxInt
)

func rankOfRung(height int) int { return -height }

// set records a rendition's newest part.
func (b *reportBoard) set(playlist string, rank int, ref partRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.last {
		if b.last[i].playlist == playlist {
			b.last[i].ref = ref
			return
		}
	}
	b.last = append(b.last, boardEntry{playlist: playlist, rank: rank, ref: ref})
	slices.SortStableFunc(b.last, func(x, y boardEntry) int { return cmp.Compare(x.rank, y.rank) })
}

// remove takes a rendition off the board (a rung dropped).
func (b *reportBoard) remove(playlist string) {
	b.mu.Lock()
	b.last = slices.DeleteFunc(b.last, func(e boardEntry) bool { return e.playlist == playlist })
	b.mu.Unlock()
}

// others appends the reports of every rendition but self.
func (b *reportBoard) others(self string, out []renditionReport) []renditionReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.last {
		if e.playlist != self && e.ref.part >= 0 {
			out = append(out, renditionReport{uri: e.playlist, msn: e.ref.msn, part: e.ref.part})
		}
	}
	return out
}

// bound is where the A/V rendition began a segment.
type bound struct {
	dts, pts int64 // on the unwrapped 90 kHz clock (clock.t)
	seq      uint64
}

// keptBounds is how many segment starts the ladder remembers: a rung
// lagging the source by more than that many segments finds no boundary
// until it catches up.
const keptBounds = 32

// began records a segment start of the A/V rendition.
func (l *ladder) began(dts, pts int64, seq uint64) {
	l.mu.Lock()
	if len(l.bounds) == keptBounds {
		l.bounds = append(l.bounds[:0], l.bounds[1:]...)
	}
	l.bounds = append(l.bounds, bound{dts: dts, pts: pts, seq: seq})
	l.mu.Unlock()
}

// boundAt is the segment start of the source whose keyframe is presented
// at pts (within half a millisecond).
func (l *ladder) boundAt(pts int64) (bound, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.bounds) - 1; i >= 0; i-- {
		if d := l.bounds[i].pts - pts; d >= -45 && d <= 45 {
			return l.bounds[i], true
		}
	}
	return bound{}, false
}

// starts is the source's segment starts, by number from..to, that the
// ladder still knows.
func (l *ladder) starts(from, to uint64) map[uint64]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[uint64]int64{}
	for _, b := range l.bounds {
		if b.seq >= from && b.seq <= to {
			out[b.seq] = b.dts
		}
	}
	return out
}

// ErrNotStarted is returned by a rung written before its Packager's first
// unit: the source's clock and boundaries are not known yet.
var ErrNotStarted = errors.New("hls: the source has not started packaging")

// Rung is one rendition of a ladder, fed by a transcoder: H.264 access
// units and AAC frames whose timestamps are on the source's timeline (the
// units' milliseconds times 90). Its methods are called from one
// goroutine; each rung may have its own.
type Rung struct {
	p      *Packager
	name   string
	height int
	asc    *flv.AudioSpecificConfig

	r        *rendition
	avc      *flv.AVCConfig
	clk      clock
	shift    int64 // the rung's decoding times minus the source's, at the last boundary
	lastDTS  int64
	frameDur int64
	sawVideo bool
	annexB   []byte
	adts     []byte
	stats    variantStats // under the ladder's lock
	err      error
}

// Rung returns the rung of that height, with the source's audio (asc,
// nil for none) muxed beside its video. Safe from any goroutine.
func (p *Packager) Rung(height int, asc *flv.AudioSpecificConfig) *Rung {
	return &Rung{p: p, name: RungRendition(height), height: height, asc: asc, frameDur: 40 * 90}
}

// Name is the rung's rendition name.
func (r *Rung) Name() string { return r.name }

// Playlist is the rung's live playlist.
func (r *Rung) Playlist() string { return PlaylistOf(r.name) }

// open creates the rung's rendition once the source has started and the
// rung's first keyframe brought its parameter sets.
func (r *Rung) open(sps, pps []byte) error {
	l := &r.p.ladder
	l.mu.Lock()
	started, c := l.started, l.clock
	l.mu.Unlock()
	if !started {
		return ErrNotStarted
	}
	r.clk = c
	r.avc = &flv.AVCConfig{Profile: sps[1], Compatibility: sps[2], Level: sps[3], NALULengthSize: 4,
		SPS: [][]byte{append([]byte(nil), sps...)}, PPS: [][]byte{append([]byte(nil), pps...)}}
	var prior []Segment
	for _, s := range r.p.prior {
		if s.Rendition == r.name {
			prior = append(prior, s)
		}
	}
	rd := newRendition(r.name, PlaylistOf(r.name), r.p.dir, true, r.asc != nil, r.p.opts, &r.clk, prior)
	rd.indexMu = &l.indexMu
	rd.onSegment = r.segmentDone
	rd.board, rd.rank = &l.board, rankOfRung(r.height)
	rd.gapStarts = l.starts
	codecs := avcCodec(r.avc)
	if r.asc != nil {
		codecs += "," + aacCodec(r.asc)
	}
	rd.codecs = codecs
	if w, h, err := spsResolution(sps); err == nil {
		rd.size = fmt.Sprintf("%dx%d", w, h)
	}
	full := r.p.opts.SegmentDuration.Seconds() / 2
	l.mu.Lock()
	r.stats = variantStats{full: full}
	for _, s := range prior {
		r.stats.add(s)
	}
	l.mu.Unlock()
	r.r = rd
	return nil
}

// Video packages one access unit of the rung (NAL units without start
// codes), pts and dts on the source's timeline times 90. Units before the
// rung's first keyframe at a boundary of the source are dropped.
func (r *Rung) Video(pts, dts int64, nalus [][]byte) error {
	if r.err != nil {
		return r.err
	}
	var sps, pps []byte
	for _, n := range nalus {
		switch flv.NALType(n) {
		case flv.NALSPS:
			sps = n
		case flv.NALPPS:
			pps = n
		}
	}
	if r.r == nil {
		if len(sps) < 4 || pps == nil {
			return nil
		}
		if err := r.open(sps, pps); err != nil {
			if errors.Is(err, ErrNotStarted) {
				return nil
			}
			r.err = err
			return err
		}
	}
	var idr bool
	r.annexB, idr = appendAnnexB(r.annexB[:0], nalus, r.avc)
	base := r.clk.media * 90
	dts, pts = dts-base+tsOffset, pts-base+tsOffset
	var b bound
	boundary := false
	if idr {
		if b, boundary = r.p.ladder.boundAt(pts); boundary {
			r.shift = dts - b.dts
		}
	}
	dts -= r.shift
	if r.sawVideo && dts <= r.lastDTS {
		dts = r.lastDTS + 1
	}
	pts = max(pts, dts)
	if d := dts - r.lastDTS; r.sawVideo && d <= 90000 {
		r.frameDur = d
	}
	r.lastDTS, r.sawVideo = dts, true
	if err := r.r.writeRungVideo(dts, pts, r.frameDur, r.annexB, idr, boundary, b.seq); err != nil {
		r.err = err
	}
	return r.err
}

// Audio packages one raw AAC frame of the rung, pts on the source's
// timeline times 90.
func (r *Rung) Audio(pts int64, raw []byte) error {
	if r.err != nil || r.r == nil || r.asc == nil {
		return r.err
	}
	var err error
	if r.adts, err = r.asc.AppendADTS(r.adts[:0], len(raw)); err != nil {
		return fmt.Errorf("rung audio frame: %w", err)
	}
	r.adts = append(r.adts, raw...)
	t := pts - r.clk.media*90 + tsOffset
	if err := r.r.writeAudio(t, int64(1024*90000/r.asc.SampleRate), r.adts); err != nil {
		r.err = err
	}
	return r.err
}

// Pause finishes the segment in progress: the rung's input stopped (its
// transcoder is restarting). What comes next follows a discontinuity.
func (r *Rung) Pause() error {
	if r.r == nil || r.err != nil {
		return r.err
	}
	r.sawVideo = false
	return r.r.pause()
}

// Close finishes the rung's segment in progress; with remove, the rung
// also leaves the master playlists and the other renditions' reports (a
// transcoder dropped it), and its live playlist is gone: taken out of
// Files, and every request waiting on it in Live, or asking Live after,
// gets ErrGone, so that a player on the rung hears at once that it must
// switch (rather than reloading a playlist that stays frozen). The
// segments and parts it published stay where they are, in Files and the
// directory, until they would have gone anyway: a player may be loading
// one, and the recording keeps the rung.
func (r *Rung) Close(remove bool) error {
	var err error
	if r.r != nil && r.err == nil {
		err = r.r.close()
	}
	if remove {
		l := &r.p.ladder
		l.board.remove(r.Playlist())
		l.mu.Lock()
		if i := slices.Index(l.rungs, r); i >= 0 {
			l.rungs = slices.Delete(l.rungs, i, i+1)
		}
		err = errors.Join(err, r.p.writeMastersLocked())
		l.mu.Unlock()
		if r.p.opts.Files != nil {
			r.p.opts.Files.Remove(r.Playlist())
		}
		r.p.opts.Live.retire(r.Playlist())
	}
	return err
}

// segmentDone measures a finished segment of the rung and lists the rung
// in the master playlists.
func (r *Rung) segmentDone(seg Segment) {
	l := &r.p.ladder
	l.mu.Lock()
	defer l.mu.Unlock()
	r.stats.add(seg)
	if !slices.Contains(l.rungs, r) {
		l.rungs = append(l.rungs, r)
		slices.SortFunc(l.rungs, func(a, b *Rung) int { return cmp.Compare(b.height, a.height) })
	}
	if err := r.p.writeMastersLocked(); err != nil {
		r.p.log.Warn("hls: master playlist", "err", err)
	}
}

// Measured is the rung's peak and average bit rate (bits per second) and
// frame rate, from its segments so far.
func (r *Rung) Measured() (peak, avg int64, fps float64) {
	l := &r.p.ladder
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.stats.n == 0 {
		return 0, 0, 0
	}
	v := r.stats.variant("")
	return v.peak, v.avg, v.frameRate
}

// syncFiles serialises the calls of a ladder's renditions to Files.
type syncFiles struct {
	mu sync.Mutex
	f  Files
}

func (s *syncFiles) Put(name string, data []byte, mod time.Time) {
	s.mu.Lock()
	s.f.Put(name, data, mod)
	s.mu.Unlock()
}

// growingOf is f as a GrowingFiles, or nil: a syncFiles is one when what
// it serialises is.
func growingOf(f Files) GrowingFiles {
	if s, ok := f.(*syncFiles); ok {
		if _, ok := s.f.(GrowingFiles); !ok {
			return nil
		}
		return s
	}
	g, _ := f.(GrowingFiles)
	return g
}

// Growing is the GrowingFiles' answer, false for a plain Files.
func (s *syncFiles) Growing(part string) bool {
	g, ok := s.f.(GrowingFiles)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return g.Growing(part)
}

func (s *syncFiles) Remove(name string) {
	s.mu.Lock()
	s.f.Remove(name)
	s.mu.Unlock()
}
