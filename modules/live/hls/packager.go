package hls

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/streamcore"
)

// ErrClosed is returned by a Packager used after Close.
var ErrClosed = errors.New("hls: packager closed")

// Files receives the files of a live stream as a Packager publishes them,
// for a server to answer the live edge from memory: the live media and
// master playlists each time they are rewritten, each segment once
// finished, each LL-HLS part. A segment or part comes before the playlist
// that lists it. A playlist's data then belongs to the receiver and is
// never modified; a segment's or part's is the Packager's buffer, valid
// during the call only (the receiver copies what it keeps: the buffer is
// reused for the next segment). Remove tells of a segment or part that
// has left the live playlist, or of the live playlist of a rendition
// removed (a ladder's rung dropped, Rung.Close). Calls come from the
// goroutine feeding the Packager (or a rung's).
//
// With Files, the parts and the live playlists rewritten after each part
// exist there only: the directory gets the segments (each part's bytes
// are in its segment's file before the part is published, unless Files
// is a GrowingFiles), the index, the master playlists, and the live
// playlists once per segment, without the LL-HLS tags. Segments and
// masters keep the modification time of their file; the rest have the
// time they were published.
type Files interface {
	Put(name string, data []byte, mod time.Time)
	Remove(name string)
}

// GrowingFiles is a Files that keeps every part of the segment in
// progress readable, held or not, until the segment itself is Put:
// Growing, asked right after a part's Put, reports whether it still does
// for that part's segment. While it does, the Packager writes the
// segment's file once, whole, when the segment ends (before Put of the
// segment), rather than once per part: one system call per part and
// rendition less, each of which woke Go's monitor thread. As soon as it
// does not, the file gets every byte put so far before the part is
// published, and each part after that as before.
type GrowingFiles interface {
	Files
	Growing(part string) bool
}

// Options tune a Packager. Zero fields take the defaults named after them.
type Options struct {
	// SegmentDuration is the duration the cutter aims for: a segment with
	// video ends at the first keyframe once it is this long; one without
	// ends at the last audio frame that fits within it.
	SegmentDuration time.Duration
	// TargetDuration is the EXT-X-TARGETDURATION of the live playlists, in
	// whole seconds, fixed for the life of the stream (RFC 8216 forbids
	// changing it). It defaults to SegmentDuration rounded up, and is
	// never below that. No segment is longer: when the encoder's keyframe
	// interval is, the cutter cuts before a non-keyframe instead (such
	// segments are marked not independent). Raise it for encoders whose
	// keyframe interval is longer than SegmentDuration.
	TargetDuration int
	// Window is the least media a live playlist holds: the oldest segment
	// leaves only while the rest still last this long. It is never below
	// three target durations, the least RFC 8216 (6.2.2) allows.
	Window time.Duration
	// DVR, when above Window, is how far back a live playlist reaches:
	// every segment of the stream within DVR of the live edge stays
	// listed, so players can rewind to the start of a show. Only the last
	// Window of them stay in Files (a server's memory) and keep their
	// parts; the older ones are served from their files. With DVR the
	// playlist offers delta updates (CAN-SKIP-UNTIL, see Delta) once it
	// lasts more than twice the skip boundary. Zero keeps the playlist to
	// Window.
	DVR time.Duration
	// Now is the wall clock of a unit without an arrival time (the first
	// unit's arrival is the first EXT-X-PROGRAM-DATE-TIME).
	Now func() time.Time
	// Logger receives notices about the stream; slog.Default() when nil.
	Logger *slog.Logger
	// OnSegment, if set, is called after each segment is recorded and
	// published (and the master playlists updated), on the goroutine
	// feeding the Packager.
	OnSegment func(Segment)
	// PartDuration is the nominal length of the LL-HLS partial segments
	// (DefaultPartDuration); within 1% of a whole fraction of
	// SegmentDuration it is that fraction (333ms is a third of a second).
	// Negative turns low latency off (no parts, no LL tags).
	PartDuration time.Duration
	// Live, if set, hears of every live playlist written, for requests
	// that wait for a segment or part (see Live).
	Live *Live
	// AudioOnly packages the audio-only rendition alone: video tags are
	// dropped unread and no A/V rendition (nor MasterAV) is written, which
	// spares the video's muxing and disk (an audio show).
	AudioOnly bool

	// Files, if set, gets every file of the live stream as it is
	// published, for a server to answer from memory (see Files).
	Files Files

	// Placeholders tells Finalize that empty segment files stand for
	// segments the media store holds (ReadIndex): they are archived.
	// Otherwise an empty one never reached the disk and is left out
	// (ReadRecorded).
	Placeholders bool

	// noSync skips Finalize's fsyncs, for tests and fuzzing only.
	noSync bool
}

// Defaults for Options.
const (
	DefaultSegmentDuration = 2 * time.Second
	DefaultWindow          = 12 * time.Second
)

func (o Options) withDefaults() Options {
	if o.SegmentDuration <= 0 {
		o.SegmentDuration = DefaultSegmentDuration
	}
	o.TargetDuration = max(o.TargetDuration, targetFor(o.SegmentDuration.Seconds()))
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	o.Window = max(o.Window, 3*time.Duration(o.TargetDuration)*time.Second)
	if o.DVR > 0 {
		o.DVR = max(o.DVR, o.Window)
	}
	switch {
	case o.PartDuration == 0:
		o.PartDuration = DefaultPartDuration
	case o.PartDuration < 0:
		o.PartDuration = 0
	}
	o.PartDuration = min(o.PartDuration, o.SegmentDuration)
	if o.PartDuration > 0 {
		// Within 1% of a whole fraction of the segment length (333ms):
		// that fraction exactly, so parts split segments evenly.
		n := max(1, (o.SegmentDuration+o.PartDuration/2)/o.PartDuration)
		if d := o.SegmentDuration / n; max(d-o.PartDuration, o.PartDuration-d) <= o.PartDuration/100 {
			o.PartDuration = d
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Packager turns one publication's access units into HLS in a directory:
// an A/V rendition (PlaylistAV) and an audio-only rendition
// (PlaylistAudio) from the same input. It is a reader of the stream core
// (streamcore.Reader, but for Close's error): the core decides the tracks
// and hands it their configurations (Tracks) before the first unit. It is
// not safe for concurrent use.
//
// A Packager opened on a directory that already holds segments (the same
// stream after the publisher reconnected) continues their numbering and
// live playlists after an EXT-X-DISCONTINUITY; timestamps may restart.
type Packager struct {
	dir  string
	opts Options
	log  *slog.Logger

	avc     *flv.AVCConfig
	asc     *flv.AudioSpecificConfig
	prior   []Segment
	started bool // the first unit came: the renditions exist

	clock    clock
	av, aud  *rendition
	hasVideo bool
	hasAudio bool
	lastDTS  int64 // 90 kHz, see clock.t
	sawVideo bool
	frameDur int64 // last video frame interval, 90 kHz
	// Audio timestamps are regenerated from the sample count, anchored
	// on the publisher's timestamps: encoders such as GStreamer's flvmux
	// jitter AAC timestamps by tens of milliseconds and even repeat them.
	audioBase   int64
	audioFrames int64
	audioSynced bool
	audioDrift  int64 // the last frame's time minus the publisher's, 90 kHz
	due         due   // for Due, on the source's goroutine
	// What the master playlists announce, and what they said last.
	statsAV, statsAudio variantStats
	masters             map[string][]variant // as last written
	annexB              []byte
	adts                []byte
	err                 error
	// ladder holds what the rungs share with the source's renditions
	// (ladder.go); its lock guards the stats and masters above too.
	ladder ladder
	// index is the segment index the source's renditions append to,
	// held open until Close.
	index *indexFile
}

// Open prepares a Packager writing into dir, creating it if needed.
func Open(dir string, opts Options) (*Packager, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create stream directory: %w", err)
	}
	prior, err := ReadIndex(dir)
	if err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if o.Files != nil {
		// The rungs of a ladder publish from their own goroutines.
		o.Files = &syncFiles{f: o.Files}
	}
	p := &Packager{
		dir:      dir,
		opts:     o,
		log:      o.Logger.With("dir", dir),
		prior:    prior,
		frameDur: 40 * 90,
		index:    &indexFile{path: filepath.Join(dir, IndexFile)},
	}
	p.due.init()
	return p, nil
}

// Tracks takes the stream's decided tracks: before the first unit, and
// again when a configuration changes or a track joins late (the A/V
// rendition then continues after a discontinuity, see addTrack). With
// AudioOnly the video track is ignored.
func (p *Packager) Tracks(t streamcore.Tracks) error {
	if p.err != nil {
		return p.err
	}
	if p.opts.AudioOnly {
		t.Video = nil
	}
	p.avc, p.asc = t.Video, t.Audio
	if !p.started || (p.avc == nil || p.hasVideo) && (p.asc == nil || p.hasAudio) {
		return nil
	}
	kind := "video"
	if p.asc != nil && !p.hasAudio {
		kind = "audio"
	}
	if err := p.addTrack(kind); err != nil {
		p.err = err
	}
	p.updateDue()
	return p.err
}

// Unit packages one access unit. The first one starts the renditions and
// anchors the playlists' clock (its arrival is the first program date
// time). A unit of a track without configuration is dropped.
func (p *Packager) Unit(u *streamcore.Unit) error {
	if p.err != nil {
		return p.err
	}
	if u.Video && p.avc == nil || !u.Video && p.asc == nil {
		return nil
	}
	var err error
	if !p.started {
		err = p.startOutput(u)
	}
	if err == nil {
		if u.Video {
			err = p.writeVideo(u)
		} else {
			err = p.writeAudio(u.DTS, u.AAC)
		}
	}
	if err != nil {
		p.err = err
	}
	p.updateDue()
	return err
}

// startOutput creates the renditions at the first unit.
func (p *Packager) startOutput(first *streamcore.Unit) error {
	p.started = true
	p.hasVideo = p.avc != nil
	p.hasAudio = p.asc != nil
	wall := first.At
	if wall.IsZero() {
		wall = p.opts.Now()
	}
	p.clock = clock{media: first.DTS, wall: wall}
	p.ladder.mu.Lock()
	p.ladder.started, p.ladder.clock = true, p.clock
	p.ladder.mu.Unlock()
	priorAV, priorAudio := splitRenditions(p.prior)
	if !p.opts.AudioOnly {
		p.av = newRendition(RenditionAV, PlaylistAV, p.dir, p.hasVideo, p.hasAudio, p.opts, &p.clock, priorAV)
	}
	if p.hasAudio {
		p.aud = newRendition(RenditionAudio, PlaylistAudio, p.dir, false, true, p.opts, &p.clock, priorAudio)
	}
	full := p.opts.SegmentDuration.Seconds() / 2
	p.ladder.mu.Lock()
	p.statsAV, p.statsAudio = variantStats{full: full}, variantStats{full: full}
	for _, s := range priorAV {
		p.statsAV.add(s)
	}
	for _, s := range priorAudio {
		p.statsAudio.add(s)
	}
	p.ladder.mu.Unlock()
	p.wire()
	for _, r := range p.prior {
		removeParts(p.dir, r.Rendition, r.Sequence) // left by the previous publication
	}
	p.log.Info("hls packaging started", "video", p.hasVideo, "audio", p.hasAudio)
	return nil
}

// splitRenditions picks the source's A/V and audio-only segments (an
// index without rendition names is the A/V rendition's); rungs are
// picked by theirs (Rung.open).
func splitRenditions(segs []Segment) (av, audio []Segment) {
	for _, s := range segs {
		switch {
		case s.Rendition == RenditionAudio:
			audio = append(audio, s)
		case !IsRung(s.Rendition):
			av = append(av, s)
		}
	}
	return av, audio
}

// addTrack takes a track whose configuration arrives after packaging
// began without it (an encoder that sends its video sequence header late).
// A transport stream cannot change its program mid-segment, so the A/V
// rendition ends its segment and continues with the new track set after
// EXT-X-DISCONTINUITY, keeping its numbering, as after a reconnection. The
// audio-only rendition is created if audio is the new track; otherwise it
// runs on untouched.
func (p *Packager) addTrack(kind string) error {
	if p.av != nil {
		if err := p.av.close(); err != nil {
			return err
		}
	}
	prior, err := ReadIndex(p.dir)
	if err != nil {
		return err
	}
	priorAV, priorAudio := splitRenditions(prior)
	p.hasVideo, p.hasAudio = p.avc != nil, p.asc != nil
	if !p.opts.AudioOnly {
		p.av = newRendition(RenditionAV, PlaylistAV, p.dir, p.hasVideo, p.hasAudio, p.opts, &p.clock, priorAV)
	}
	if p.hasAudio && p.aud == nil {
		p.aud = newRendition(RenditionAudio, PlaylistAudio, p.dir, false, true, p.opts, &p.clock, priorAudio)
	}
	p.wire()
	p.log.Info("hls track added; the A/V rendition continues after a discontinuity", "track", kind, "video", p.hasVideo, "audio", p.hasAudio)
	return nil
}

func (p *Packager) writeVideo(u *streamcore.Unit) error {
	var idr bool
	p.annexB, idr = appendAnnexB(p.annexB[:0], u.NALUs, p.avc)
	t := p.clock.t(u.DTS)
	pts := t + int64(u.CTS)*90
	if p.sawVideo && t <= p.lastDTS {
		// Decoding times must increase; nudge a repeated one forward.
		t = p.lastDTS + 1
		pts = max(pts, t)
	}
	if d := t - p.lastDTS; p.sawVideo && d <= 90000 {
		p.frameDur = d
	}
	p.lastDTS, p.sawVideo = t, true
	return p.av.writeVideo(t, pts, p.frameDur, p.annexB, idr)
}

// audioResync is how far the sample-count timeline may drift from the
// publisher's timestamps before it is re-anchored on them (a real gap).
const audioResync = 150 * 90

func (p *Packager) writeAudio(ts int64, raw []byte) error {
	var err error
	if p.adts, err = p.asc.AppendADTS(p.adts[:0], len(raw)); err != nil {
		return fmt.Errorf("audio frame: %w", err)
	}
	p.adts = append(p.adts, raw...)
	rate := int64(p.asc.SampleRate)
	in := p.clock.t(ts)
	t := p.audioBase + p.audioFrames*1024*90000/rate
	if !p.audioSynced || t-in > audioResync || in-t > audioResync {
		p.audioBase, p.audioFrames, p.audioSynced = in, 0, true
		t = in
	}
	p.audioFrames++
	p.audioDrift = t - in
	dur := 1024 * 90000 / rate
	if p.av != nil {
		if err := p.av.writeAudio(t, dur, p.adts); err != nil {
			return err
		}
	}
	return p.aud.writeAudio(t, dur, p.adts)
}

// Close finishes the segments in progress and updates the live playlists.
// It does not end them (no EXT-X-ENDLIST): the publisher may come back,
// and Finalize ends the stream. Close is idempotent.
func (p *Packager) Close() error {
	if errors.Is(p.err, ErrClosed) {
		return nil
	}
	var errs []error
	for _, r := range []*rendition{p.av, p.aud} {
		if r != nil {
			errs = append(errs, r.close())
		}
	}
	p.ladder.indexMu.Lock()
	errs = append(errs, p.index.close())
	p.ladder.indexMu.Unlock()
	p.err = ErrClosed
	return errors.Join(errs...)
}

// wire gives the renditions their codecs and video size (for the index
// and the master playlists), each other for EXT-X-RENDITION-REPORT, and
// the packager's segment hook.
func (p *Packager) wire() {
	var video, audio, size string
	if p.hasVideo {
		video = avcCodec(p.avc)
		if w, h, err := spsResolution(p.avc.SPS[0]); err == nil {
			size = fmt.Sprintf("%dx%d", w, h)
		}
	}
	if p.hasAudio {
		audio = aacCodec(p.asc)
	}
	for _, r := range []*rendition{p.av, p.aud} {
		if r != nil {
			r.indexMu = &p.ladder.indexMu
			r.index = p.index
		}
	}
	if p.av != nil {
		p.av.began = p.ladder.began
		p.av.codecs = strings.Trim(video+","+audio, ",")
		p.av.size = size
		p.av.onSegment = p.segmentDone
	}
	if p.aud != nil {
		p.aud.codecs = audio
		p.aud.onSegment = p.segmentDone
	}
	if p.av != nil {
		p.av.board, p.av.rank = &p.ladder.board, rankAV
	}
	if p.aud != nil {
		p.aud.board, p.aud.rank = &p.ladder.board, rankAudio
	}
}

// segmentDone updates the master playlists with a finished segment before
// the caller hears of it, so a player sent to them finds both renditions.
func (p *Packager) segmentDone(seg Segment) {
	p.ladder.mu.Lock()
	if seg.Rendition == RenditionAudio {
		p.statsAudio.add(seg)
	} else {
		p.statsAV.add(seg)
	}
	err := p.writeMastersLocked()
	p.ladder.mu.Unlock()
	if err != nil {
		p.log.Warn("hls: master playlist", "err", err)
	}
	if p.opts.OnSegment != nil {
		p.opts.OnSegment(seg)
	}
}

// writeMastersLocked writes the live master playlists whose announcement
// changed (see stale): MasterAV once the A/V rendition has a segment with
// video, with the ladder's rungs after it, MasterAudio once the
// audio-only rendition has one. The ladder's lock is held.
func (p *Packager) writeMastersLocked() error {
	if p.masters == nil {
		p.masters = map[string][]variant{}
	}
	var audio []variant
	if p.statsAudio.n > 0 {
		audio = append(audio, p.statsAudio.variant(PlaylistAudio))
		if err := p.writeMaster(MasterAudio, audio); err != nil {
			return err
		}
	}
	if p.statsAV.n > 0 && strings.Contains(p.statsAV.last.Codecs, "avc1") {
		vs := []variant{p.statsAV.variant(PlaylistAV)}
		for _, r := range p.ladder.rungs {
			vs = append(vs, r.stats.variant(r.Playlist()))
		}
		return p.writeMaster(MasterAV, append(vs, audio...))
	}
	return nil
}

func (p *Packager) writeMaster(name string, vs []variant) error {
	if !stale(p.masters[name], vs) {
		return nil
	}
	if err := putFile(p.dir, name, renderMaster(vs...), p.opts.Files); err != nil {
		return err
	}
	p.masters[name] = vs
	return nil
}

// stale reports whether a live master announcing old should be rewritten
// to announce now: when a variant, its codecs or resolution change, its
// frame rate by more than 1%, its peak bandwidth rises, or its average
// bandwidth is more than a tenth off. The average moves with every
// segment, and players read the master once: rewriting both masters after
// every segment of either rendition cost as much as a part's playlist
// (Finalize writes the archive's masters with the exact figures).
func stale(old, now []variant) bool {
	if len(old) != len(now) {
		return true
	}
	for i, v := range now {
		o := old[i]
		if v.uri != o.uri || v.codecs != o.codecs || v.resolution != o.resolution ||
			math.Abs(v.frameRate-o.frameRate) > o.frameRate/100 ||
			v.peak > o.peak || v.avg*10 < o.avg*9 || v.avg*10 > o.avg*11 {
			return true
		}
	}
	return false
}

// Start is the wall-clock time of the first media sample of this
// publication (the arrival of the first tag packaged); zero until
// packaging has started. Segment program date times count from it.
func (p *Packager) Start() time.Time { return p.clock.wall }

// HasVideo and HasAudio report the tracks being packaged; both are false
// until the packager has seen enough of the stream to decide, and a track
// that arrives later turns its flag on.
func (p *Packager) HasVideo() bool { return p.hasVideo }

// HasAudio reports whether an audio track is being packaged.
func (p *Packager) HasAudio() bool { return p.hasAudio }
