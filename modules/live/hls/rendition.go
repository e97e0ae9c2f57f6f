package hls

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// tsOffset is added to every PES timestamp so that samples slightly
// earlier than the first one (audio ahead of video, negative composition
// offsets) and the PCR, which runs pcrDelay ahead, stay positive.
const tsOffset = 126000 // 1.4 s on the 90 kHz clock

// rendition cuts one output (A/V or audio-only) into segments and keeps
// its live playlist.
type rendition struct {
	name     string
	playlist string
	dir      string
	video    bool // carries the video track; cuts on keyframes
	audio    bool

	// Times below are on the unwrapped 90 kHz clock (see clock.t).
	length    int64 // SegmentDuration: cut at the first keyframe once this long
	longest   int64 // TARGETDURATION: no segment is longer
	td        int
	window    float64 // least seconds of the live edge (in Files, with parts)
	dvr       float64 // least seconds in the live playlist (≥ window)
	onSegment func(Segment)
	// files hears of every file published (Options.Files). When set, the
	// parts and the playlists rewritten after each part go there only:
	// the disk gets the segments and a playlist per segment (see
	// writePlaylist).
	files Files
	// growing is files when it is a GrowingFiles: the segment file is
	// then written once per segment (see finishPart).
	growing GrowingFiles
	// diskParts: a part was written to the segment's file, the growing
	// memory file having failed or been dropped.
	diskParts bool
	mem       []byte // the buffer of the segments' copies for files, reused
	clock     *clock
	codecs    string // RFC 6381 codecs of the rendition, for the index
	size      string // WIDTHxHEIGHT of the video, "" if unknown

	// indexMu keeps the index appends of a ladder's renditions apart.
	indexMu *sync.Mutex
	// index, when set, is the Packager's index held open; without, each
	// segment opens it (appendIndex).
	index *indexFile
	// began, when set, hears of each segment started at a keyframe: its
	// decoding and presentation time and sequence number (the A/V
	// rendition tells the ladder's rungs where to cut, ladder.go).
	began func(dts, pts int64, seq uint64)
	// gapStarts, on a rung, gives the source's segment starts (decoding
	// times) by number from..to, those the ladder still knows (gapTo).
	gapStarts func(from, to uint64) map[uint64]int64

	// Low latency: parts of partLen ticks, none longer than partTarget.
	partLen, partTarget int64
	notify              *Live
	// board, when set, hears of this rendition's parts and gives the
	// others' for EXT-X-RENDITION-REPORT (rank: its place there).
	board    *reportBoard
	rank     int
	parts    map[uint64][]Part
	curParts []Part
	// partText holds the text of the finished segments that keep their
	// parts as a playlist lists them (parts included), by sequence, and
	// curText the tags of curParts: each rendered once rather than after
	// every part (the playlist is rendered after each one).
	partText  map[uint64][]byte
	curText   []byte
	partStart int64
	partIndep bool
	partMedia bool    // the part in progress holds a sample
	partVideo bool    // and a video frame
	lastPart  partRef // the newest part published
	closed    bool
	frames    int // video frames in the current segment

	seq      uint64 // sequence number of the next segment
	fresh    bool   // no segment yet, nor any before a reconnection
	nextDisc bool   // the next segment follows a reconnection
	live     []Segment
	discSeq  uint64
	// edge counts the segments at the front of live that have left the
	// live edge (Window): out of Files, without parts, still listed.
	edge int
	// lines holds, from lineOff on, the text of the first len(lineLen)
	// segments of live as a playlist lists them without parts (lineLen[i]
	// bytes each): rendered once per segment rather than after every part.
	lines   []byte
	lineLen []int
	lineOff int

	mux      *tsMuxer
	cur      *segmentWriter
	curFile  string
	curStart int64
	curIndep bool
	end      int64 // end of the last sample written
	videoEnd int64 // end of the last video frame written
}

type partRef struct {
	msn  uint64
	part int // -1: none yet
}

// clock maps the publisher's millisecond timestamps onto an unwrapped
// 90 kHz clock starting at tsOffset, and that clock onto wall-clock time.
// Transport stream timestamps are its values modulo 2^33.
type clock struct {
	media int64 // ms timestamp of the first sample
	wall  time.Time
}

func (c *clock) t(ms int64) int64 { return (ms-c.media)*90 + tsOffset }

func (c *clock) at(t int64) time.Time {
	return c.wall.Add(time.Duration(t-tsOffset) * time.Second / 90000)
}

func newRendition(name, playlistName, dir string, video, audio bool, o Options, c *clock, prior []Segment) *rendition {
	r := &rendition{
		partLen:   (o.PartDuration.Nanoseconds()*9 + 50000) / 100000, // 90 kHz ticks
		notify:    o.Live,
		parts:     map[uint64][]Part{},
		lastPart:  partRef{part: -1},
		name:      name,
		playlist:  playlistName,
		dir:       dir,
		video:     video,
		audio:     audio,
		length:    o.SegmentDuration.Milliseconds() * 90,
		td:        o.TargetDuration,
		window:    o.Window.Seconds(),
		dvr:       max(o.DVR, o.Window).Seconds(),
		onSegment: o.OnSegment,
		files:     o.Files,
		growing:   growingOf(o.Files),
		clock:     c,
	}
	if !video {
		// Audio is cut on time, never longer than SegmentDuration: its
		// playlist announces no more than that.
		r.td = targetFor(o.SegmentDuration.Seconds())
	}
	r.longest = int64(r.td) * 90000
	r.partTarget = partTargetOf(r.partLen)
	r.mux = newTSMuxer(video, audio)
	r.fresh = len(prior) == 0
	if len(prior) > 0 {
		// A reconnection: continue the numbering and the live window,
		// and mark the break in timestamps and encoder state.
		r.seq = prior[len(prior)-1].Sequence + 1
		r.nextDisc = true
		start := windowStart(prior, r.dvr)
		r.live = append([]Segment(nil), prior[start:]...)
		for _, s := range prior[:start] {
			if s.Discontinuity {
				r.discSeq++
			}
		}
	}
	return r
}

// jitterOf is how far a frame's timestamp may stray from the encoder's
// cadence and still count as on time: half a frame, at most maxJitter.
// RTMP timestamps are whole milliseconds, so a keyframe due at 2 s may
// arrive stamped a millisecond early or late.
func jitterOf(frameDur int64) int64 { return min(frameDur/2, maxJitter) }

// maxJitter keeps a segment stretched by jitter rounding to the target
// duration, as RFC 8216 requires: 100 ms on the 90 kHz clock.
const maxJitter = 9000

// writeVideo adds an access unit (Annex-B) with its timestamps. A segment
// ends at the first keyframe once it lasts SegmentDuration; a keyframe a
// little early by jitter still ends it, so an encoder whose keyframe
// interval is the segment length gets segments of exactly that length.
func (r *rendition) writeVideo(dts, pts, frameDur int64, au []byte, idr bool) error {
	jitter := jitterOf(frameDur)
	switch {
	case r.cur == nil:
		if !idr {
			return nil // wait for a keyframe: a segment must start decodable
		}
		if err := r.start(dts, true); err != nil {
			return err
		}
		r.begin(dts, pts)
	case idr && dts-r.curStart >= r.length-jitter:
		if err := r.cut(dts, true); err != nil {
			return err
		}
		r.begin(dts, pts)
	case dts+frameDur-r.curStart > r.longest+jitter:
		// The keyframe interval is longer than the target duration: cut
		// anyway, producing a segment that does not start with a keyframe.
		if err := r.cut(dts, false); err != nil {
			return err
		}
	case r.partDue(dts, frameDur, jitter):
		if err := r.cutPart(dts, idr); err != nil {
			return err
		}
	}
	return r.addVideo(dts, pts, frameDur, jitter, au, idr)
}

// addVideo writes a video frame into the part in progress and publishes
// the part at once if the frame ends it (see partEnds).
func (r *rendition) addVideo(dts, pts, frameDur, jitter int64, au []byte, idr bool) error {
	if idr && !r.partVideo {
		r.partIndep = true // a part cut at its boundary whose video opens on a keyframe
	}
	r.frames++
	r.mux.writePES(r.mux.track(pidVideo), pts&tsClockMask, dts&tsClockMask, au, idr)
	r.partMedia, r.partVideo = true, true
	r.end = max(r.end, dts+frameDur)
	r.videoEnd = dts + frameDur
	if r.partEnds(dts+frameDur, jitter) {
		if err := r.cutPart(dts+frameDur, false); err != nil {
			return err
		}
	}
	return r.spill()
}

// begin tells began of a segment just started at a keyframe.
func (r *rendition) begin(dts, pts int64) {
	if r.began != nil {
		r.began(dts, pts, r.seq)
	}
}

// writeRungVideo is writeVideo for a rung of a ladder, which is cut where
// the source was: at a keyframe the source began a segment with
// (boundary), so that every variant has the same segments. seq, for the
// rung's first segment, is the source's number of it.
func (r *rendition) writeRungVideo(dts, pts, frameDur int64, au []byte, idr, boundary bool, seq uint64) error {
	jitter := jitterOf(frameDur)
	switch {
	case r.cur == nil:
		if !idr || !boundary {
			return nil
		}
		switch {
		case r.fresh:
			r.seq = seq
		case seq > r.seq && r.gapStarts != nil:
			r.gapTo(seq, dts, r.gapStarts(r.seq, seq))
		}
		if err := r.start(dts, true); err != nil {
			return err
		}
	case idr && boundary && dts > r.curStart:
		if err := r.cut(dts, true); err != nil {
			return err
		}
	case dts+frameDur-r.curStart > r.longest+jitter:
		if err := r.cut(dts, false); err != nil {
			return err
		}
	case r.partDue(dts, frameDur, jitter):
		if err := r.cutPart(dts, idr); err != nil {
			return err
		}
	}
	r.fresh = false
	return r.addVideo(dts, pts, frameDur, jitter, au, idr)
}

// gapTo lists the source's segments from r.seq up to seq (excluded),
// which a rung missed while its transcoder restarted, as EXT-X-GAP
// segments: the rung's next segment then has the source's number, as
// every one before the restart had. starts holds the source's segment
// starts it still knows by number; next is where segment seq begins.
// Spans it does not know are shared evenly.
func (r *rendition) gapTo(seq uint64, next int64, starts map[uint64]int64) {
	begin := r.end
	if v, ok := starts[r.seq]; ok {
		begin = v
	}
	n := int64(seq - r.seq)
	even := max(next-begin, 0) / n
	for k := r.seq; k < seq; k++ {
		from, ok := starts[k]
		if !ok {
			from = begin + int64(k-r.seq)*even
		}
		to, ok := starts[k+1]
		switch {
		case k+1 == seq:
			to = next
		case !ok:
			to = from + even
		}
		r.live = append(r.live, Segment{
			Rendition:       r.name,
			Sequence:        k,
			File:            segmentFile(r.name, k),
			Duration:        float64(max(to-from, 90)) / 90000,
			ProgramDateTime: r.clock.at(from),
			Independent:     true,
			Target:          r.td,
			Gap:             true,
		})
	}
	r.seq = seq
	r.trim()
}

// pause finishes the segment in progress (a rung whose transcoder
// stopped): the next one follows a discontinuity.
func (r *rendition) pause() error {
	err := r.close()
	r.closed = false
	r.nextDisc = true
	return err
}

// writeAudio adds an ADTS frame with its timestamp. Without video a
// segment ends at the last frame boundary within SegmentDuration, so it
// never exceeds the target duration.
func (r *rendition) writeAudio(ts, frameDur int64, frame []byte) error {
	if r.video {
		if r.cur == nil {
			return nil // the A/V rendition starts at the first keyframe
		}
	} else {
		switch {
		case r.cur == nil:
			if err := r.start(ts, true); err != nil {
				return err
			}
		case ts+frameDur-r.curStart > r.length && ts > r.curStart:
			if err := r.cut(ts, true); err != nil {
				return err
			}
		case r.partDue(ts, frameDur, frameDur/2):
			if err := r.cutPart(ts, true); err != nil {
				return err
			}
		}
	}
	r.mux.writePES(r.mux.track(pidAudio), ts&tsClockMask, -1, frame, !r.video)
	r.partMedia = true
	r.end = max(r.end, ts+frameDur)
	return r.spill()
}

// spillAt is how much transport stream a rendition without parts gathers
// before writing it to the segment file.
const spillAt = 64 << 10

// spill writes what the muxer gathered to the segment file once it is
// spillAt long, when there are no parts (with parts, finishPart writes
// each part in one piece).
func (r *rendition) spill() error {
	if r.partLen > 0 || len(r.mux.out) < spillAt {
		return nil
	}
	return r.flush()
}

// flush writes what the muxer gathered to the segment file.
func (r *rendition) flush() error {
	if _, err := r.cur.Write(r.mux.out); err != nil {
		return err
	}
	r.mux.out = r.mux.out[:0]
	return nil
}

func (r *rendition) start(ts int64, independent bool) error {
	name := segmentFile(r.name, r.seq)
	w, err := createSegment(filepath.Join(r.dir, name))
	if err != nil {
		return err
	}
	if r.files != nil {
		w.mem = r.mem[:0]
		if w.mem == nil {
			w.mem = make([]byte, 0, spillAt)
		}
	}
	r.cur, r.curFile, r.curStart, r.curIndep = w, name, ts, independent
	r.end = ts
	r.frames = 0
	r.mux.out = r.mux.out[:0]
	r.startPart(ts, independent)
	return nil
}

// startPart begins a part at ts: PAT and PMT first, so the part plays on
// its own and the segment still reads as one transport stream.
func (r *rendition) startPart(ts int64, independent bool) {
	r.partStart, r.partIndep, r.partMedia, r.partVideo = ts, independent, false, false
	r.mux.writeTables()
}

// partDue reports whether a sample at t (lasting frameDur) begins a new
// part: parts end on the first sample at a multiple of partLen into the
// segment (jitter early still counts) once they last partMin, or before
// one that would make the part longer than the announced part target.
func (r *rendition) partDue(t, frameDur, jitter int64) bool {
	if r.partLen <= 0 || t <= r.partStart {
		return false
	}
	boundary := r.curStart + int64(len(r.curParts)+1)*r.partLen
	return t >= boundary-jitter && t-r.partStart >= r.partMin() || t+frameDur-r.partStart > r.partTarget
}

// partMin is the shortest part cut at a boundary: 85 % of the
// PART-TARGET, which RFC 8216bis (4.4.4.9) asks of every part but the
// last of its segment. At a rate whose frames do not divide the part
// length (24 or 23.976 fps against 200 ms parts) the boundaries drift
// through the frames, and every few parts one would otherwise come out a
// frame short (167 ms against a 220 ms target); such a part takes the
// next frame too, and the parts after it follow the boundaries a frame
// late.
func (r *rendition) partMin() int64 { return (r.partTarget*85 + 99) / 100 }

// partEnds reports whether a video frame ending at end completes the part
// in progress: it reaches the part's boundary (jitter early still counts)
// and the part lasts partMin. Such a part is published as that frame
// arrives rather than with the next one, a frame's time sooner. The last
// part of a segment is left to the keyframe that ends the segment (or to
// the frame that would make it outgrow the target, as partDue does): the
// next frame may begin a segment rather than a part.
func (r *rendition) partEnds(end, jitter int64) bool {
	if r.partLen <= 0 || end <= r.partStart {
		return false
	}
	boundary := r.curStart + int64(len(r.curParts)+1)*r.partLen
	return end >= boundary-jitter && end-r.partStart >= r.partMin() && boundary < r.curStart+r.length-jitter
}

// cutPart publishes the part in progress, which ends at next, and starts
// the next one.
func (r *rendition) cutPart(next int64, independent bool) error {
	if err := r.finishPart(next); err != nil {
		return err
	}
	if err := r.writePlaylist(false); err != nil {
		return err
	}
	r.startPart(next, independent)
	return nil
}

// finishPart ends the part in progress, built in the muxer's buffer: one
// write to the segment file, then the part itself. With Files the part
// goes there only, as the slice of the segment's copy in memory that
// holds its bytes; without, it is written to its own file, in place (see
// Live.PartPublished): parts are for the live edge only, the segment
// holds the same bytes. Either way the segment file has the part's bytes
// before the part is published, so a server may also send a part as that
// range of the segment; except with a GrowingFiles that keeps the
// segment's parts readable itself: the file is then written when the
// segment ends.
func (r *rendition) finishPart(next int64) error {
	dur := next - r.partStart
	if dur > r.partTarget || dur <= 0 {
		dur = min(max(r.end-r.partStart, 90), r.partTarget)
	}
	name := partFile(r.name, r.seq, len(r.curParts))
	from := len(r.cur.mem)
	switch g := r.growing; {
	case r.files == nil:
		if err := writeNew(filepath.Join(r.dir, name), r.mux.out); err != nil {
			// Never leave a short part where its hint sends players.
			syscall.Unlink(filepath.Join(r.dir, name))
			return fmt.Errorf("write part: %w", err)
		}
		if err := r.flush(); err != nil {
			return err
		}
	case g != nil:
		// The segment's file is written when the segment ends, while
		// Files keeps the parts readable; else now, before the part
		// is published (the playlist, the position waiters wait on).
		r.cur.hold(r.mux.out)
		r.mux.out = r.mux.out[:0]
		to := len(r.cur.mem)
		r.files.Put(name, r.cur.mem[from:to:to], time.Now())
		if !g.Growing(name) {
			r.diskParts = true // no more parts inline (Packager.Inline)
			if err := r.cur.writePending(); err != nil {
				return err
			}
		}
	default:
		if err := r.flush(); err != nil {
			return err
		}
		to := len(r.cur.mem)
		r.files.Put(name, r.cur.mem[from:to:to], time.Now())
	}
	part := Part{File: name, Duration: float64(dur) / 90000, Independent: r.partIndep}
	r.curParts = append(r.curParts, part)
	r.curText = part.appendTag(r.curText)
	r.lastPart = partRef{msn: r.seq, part: len(r.curParts) - 1}
	if r.board != nil {
		r.board.set(r.playlist, r.rank, r.lastPart)
	}
	return nil
}

func (r *rendition) cut(ts int64, independent bool) error {
	if err := r.finish(ts); err != nil {
		return err
	}
	return r.start(ts, independent)
}

// finish closes the current segment, which ends where the next begins
// (next), records it and publishes it in the live playlist.
func (r *rendition) finish(next int64) error {
	dur := next - r.curStart
	if dur > r.longest+maxJitter || dur <= 0 {
		// A gap in the input: count only the media actually present.
		dur = r.end - r.curStart
	}
	switch {
	case r.partLen > 0 && !r.partMedia && len(r.curParts) > 0:
		// The last part was published at its boundary and nothing came
		// after (the publisher left): no empty part, only its tables.
		r.mux.out = r.mux.out[:0]
	case r.partLen > 0:
		if err := r.finishPart(next); err != nil {
			return err
		}
	default:
		if err := r.flush(); err != nil {
			return err
		}
	}
	if err := r.cur.writePending(); err != nil {
		return err
	}
	w := r.cur
	r.cur = nil
	if err := w.finish(); err != nil {
		os.Remove(filepath.Join(r.dir, r.curFile))
		return err
	}
	if r.files != nil {
		r.files.Put(r.curFile, w.mem, w.modTime)
		r.mem = w.mem
	}
	seg := Segment{
		Size:            w.n,
		Codecs:          r.codecs,
		Resolution:      r.size,
		Rendition:       r.name,
		Sequence:        r.seq,
		File:            r.curFile,
		Duration:        float64(max(dur, 90)) / 90000,
		ProgramDateTime: r.clock.at(r.curStart),
		Discontinuity:   r.nextDisc,
		Independent:     r.curIndep,
		Target:          r.td,
	}
	if r.video && r.frames > 0 && dur > 0 {
		seg.FrameRate = math.Round(float64(r.frames)*90000/float64(dur)*1000) / 1000
	}
	r.parts[seg.Sequence] = r.curParts
	if r.partLen > 0 {
		if r.partText == nil {
			r.partText = make(map[uint64][]byte)
		}
		r.partText[seg.Sequence] = seg.appendLines(nil, r.curParts)
	}
	r.curParts, r.curText = nil, r.curText[:0]
	r.seq++
	r.nextDisc = false
	var err error
	if r.index != nil {
		err = r.index.append(seg, r.indexMu)
	} else {
		err = appendIndex(r.dir, seg, r.indexMu)
	}
	if err != nil {
		// Unrecorded, the segment is no part of the stream: nothing may
		// serve or archive it.
		os.Remove(filepath.Join(r.dir, seg.File))
		if r.files != nil {
			r.files.Remove(seg.File)
		}
		r.dropParts(seg.Sequence)
		return err
	}
	r.live = append(r.live, seg)
	r.trim()
	if err := r.writePlaylist(true); err != nil {
		return err
	}
	if r.onSegment != nil {
		r.onSegment(seg)
	}
	return nil
}

// trim moves the segments that left the live edge (Window) out of Files
// and drops their parts, then drops from the playlist those past the DVR
// window (Window again without DVR). The segment files stay on disk.
func (r *rendition) trim() {
	if e := windowStart(r.live, r.window); e > r.edge {
		for _, s := range r.live[r.edge:e] {
			r.dropParts(s.Sequence)
			if r.files != nil {
				r.files.Remove(s.File)
			}
		}
		r.edge = e
	}
	n := windowStart(r.live, r.dvr)
	if n == 0 {
		return
	}
	for _, s := range r.live[:n] {
		if s.Discontinuity {
			r.discSeq++
		}
	}
	r.live = append(r.live[:0], r.live[n:]...)
	r.edge -= n
	if n >= len(r.lineLen) {
		r.lines, r.lineLen, r.lineOff = r.lines[:0], r.lineLen[:0], 0
		return
	}
	for _, l := range r.lineLen[:n] {
		r.lineOff += l
	}
	r.lineLen = append(r.lineLen[:0], r.lineLen[n:]...)
	if r.lineOff > len(r.lines)/2 {
		r.lines = append(r.lines[:0], r.lines[r.lineOff:]...)
		r.lineOff = 0
	}
}

// coldLines returns the text of the segments of live before the last
// hot ones (those that carry parts), extending it with the segments that
// became cold since the last call, and how many segments it holds.
func (r *rendition) coldLines(hot int) ([]byte, int) {
	want := max(0, len(r.live)-hot)
	for i := len(r.lineLen); i < want; i++ {
		before := len(r.lines)
		r.lines = r.live[i].appendLines(r.lines, nil)
		r.lineLen = append(r.lineLen, len(r.lines)-before)
	}
	if want < len(r.lineLen) {
		// Fewer segments than cached (cannot happen while segments only
		// join at the end): render them all afresh.
		return nil, 0
	}
	return r.lines[r.lineOff:], want
}

// skipBoundary is the CAN-SKIP-UNTIL a DVR playlist of target duration
// td offers: six target durations, the least RFC 8216bis (4.4.3.8)
// allows.
func skipBoundary(td int) float64 { return 6 * float64(td) }

// skipUntil is the CAN-SKIP-UNTIL of the live playlist now: with DVR,
// once its segments last more than twice the skip boundary, so that a
// delta update is at most about half of it; 0 otherwise.
func (r *rendition) skipUntil() float64 {
	if r.dvr <= r.window {
		return 0
	}
	b := skipBoundary(r.td)
	var total float64
	for i := len(r.live) - 1; i >= 0; i-- {
		if total += r.live[i].Duration; total > 2*b {
			return b
		}
	}
	return 0
}

// livePlaylist is the live playlist as it stands.
func (r *rendition) livePlaylist() playlist {
	p := playlist{
		targetDuration: r.td,
		mediaSequence:  r.seq,
		discontinuity:  r.discSeq,
		segments:       r.live,
		skipUntil:      r.skipUntil(),
	}
	hot := 0
	if r.partLen > 0 {
		hot = partSegments
	}
	p.cold, p.coldN = r.coldLines(hot)
	if len(r.live) > 0 {
		p.mediaSequence = r.live[0].Sequence
	}
	if r.partLen > 0 {
		ll := &lowLatency{
			partTarget:  r.partTarget,
			parts:       r.parts,
			partText:    r.partText,
			pending:     r.curParts,
			pendingText: r.curText,
			pendingDisc: r.nextDisc,
		}
		if !r.closed {
			ll.hint = partFile(r.name, r.seq, len(r.curParts))
		}
		if r.board != nil {
			ll.reports = r.board.others(r.playlist, nil)
		}
		p.ll = ll
	}
	return p
}

// writePlaylist publishes the live playlist after a part or, with
// segment, after a segment (or the last change before the publisher
// left). Without Files each one replaces the file on disk. With Files
// each one goes there, and the disk gets one per segment without the
// LL-HLS tags: a plain live playlist of segments that are all on disk,
// for what reads the directory rather than the server's memory (the media
// store's uploader, a restart, another node serving from the store). That
// spares the live edge a file replacement per part, which cost as much
// CPU as the rest of the ingest (docs/benchmarks.md, "Ingest CPU").
func (r *rendition) writePlaylist(segment bool) error {
	if len(r.live) == 0 && len(r.curParts) == 0 {
		return nil
	}
	p := r.livePlaylist()
	data := p.render()
	var diskErr error
	switch {
	case r.files == nil:
		if err := replaceFile(r.dir, r.playlist, data); err != nil {
			return err
		}
	case segment:
		disk := data
		if p.ll != nil {
			p.ll = nil
			disk = p.render()
		}
		// The copy in memory is published even when the disk's is not
		// (a full disk): it lists only recorded segments either way, and
		// players must see the stream's end.
		diskErr = replaceFile(r.dir, r.playlist, disk)
	}
	if r.files != nil {
		r.files.Put(r.playlist, data, time.Now())
	}
	if r.partLen > 0 {
		r.notify.publish(r.playlist, r.position())
	}
	return diskErr
}

// position is how far the live playlist has got, for waiting requests.
func (r *rendition) position() Position {
	return Position{
		Segments:   r.seq,
		MSN:        r.lastPart.msn,
		Part:       r.lastPart.part,
		Target:     r.td,
		PartTarget: float64(r.partTarget) / 90000,
	}
}

// dropParts forgets the parts of a segment that left the live playlist:
// Files is told, or their files are deleted.
func (r *rendition) dropParts(seq uint64) {
	if r.files != nil {
		for _, p := range r.parts[seq] {
			r.files.Remove(p.File)
		}
	} else if r.partLen > 0 {
		removeParts(r.dir, r.name, seq)
	}
	delete(r.parts, seq)
	delete(r.partText, seq)
}

// removeParts deletes the part files of a segment, if any.
func removeParts(dir, rendition string, seq uint64) {
	for i := 0; ; i++ {
		if err := os.Remove(filepath.Join(dir, partFile(rendition, seq, i))); err != nil {
			return
		}
	}
}

// close finishes the segment in progress, if it holds any media. A
// segment that could not be written whole (a full disk), now or while
// finishing it, is dropped instead: it is never recorded, listed or
// archived.
func (r *rendition) close() error {
	r.closed = true
	if r.cur == nil {
		return nil
	}
	var err error
	if r.end > r.curStart && !r.cur.failed {
		if r.video {
			// Like every other A/V segment, the last one is measured on
			// its video: the audio interleaved past the last frame is
			// within it.
			err = r.finish(r.videoEnd)
		} else {
			err = r.finish(r.end)
		}
		if err == nil {
			return nil
		}
	}
	if r.cur != nil { // (finish removed a file it could not close or record)
		r.cur.abandon()
		r.cur = nil
		if rerr := os.Remove(filepath.Join(r.dir, r.curFile)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	// The parts of the dropped segment go too: it never completes.
	for _, p := range r.curParts {
		if r.files != nil {
			r.files.Remove(p.File)
		}
	}
	if r.files == nil && r.partLen > 0 {
		removeParts(r.dir, r.name, r.seq)
	}
	r.curParts, r.curText = nil, r.curText[:0]
	return errors.Join(err, r.writePlaylist(true)) // without the preload hint
}
