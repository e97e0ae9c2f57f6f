package live

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/streamcore"
	"github.com/onair/onair/modules/shows"
)

// The transcoder is a reader of the stream core: one ffmpeg child per
// show, fed the source as FLV on its standard input (muxed here from the
// core's units), each rung coming back as FLV on a pipe of its own, read
// (flv.Reader) into the show's HLS packager as a rung of its ladder
// (hls.Rung). Like every reader it has a bounded queue: a
// transcoder that cannot keep up skips to the next keyframe, and the
// source's rendition, packaged by another reader, never waits for it.
//
// A transcoder slower than real time (ffmpeg's progress: speed under
// overloadSpeed for overloadFor) drops its highest rung and starts again
// without it; one that crashes starts again after a pause that doubles
// (restartPause up to maxRestartPause), while the show keeps its source.

const (
	// transcodeQueue is the units the transcoder may have waiting:
	// about 3 s of 30 fps video with its audio.
	transcodeQueue = 256
	overloadSpeed  = 0.95
	overloadFor    = 10 * time.Second
	// speedWindow is the span over which the speed is measured.
	speedWindow     = 3 * time.Second
	restartPause    = time.Second
	maxRestartPause = 30 * time.Second
	// healthyRun resets the pause: a transcoder that ran this long
	// before it crashed starts again after restartPause.
	healthyRun = time.Minute
	// flvBase is how far before its first unit the FLV fed to ffmpeg
	// starts, so that audio a little earlier than the first keyframe
	// keeps a positive timestamp.
	flvBase = 10_000 // ms
)

// transcoder feeds a show's ladder. Tracks, Unit and Close run on the
// core's reader goroutine; the health is read from any (mu).
type transcoder struct {
	cfg    *ladderConfig
	showID int64
	log    *slog.Logger
	pkg    *hls.Packager

	// Reader's goroutine only.
	tracks  streamcore.Tracks
	active  []rungSpec
	proc    *ffmpegProc
	pause   time.Duration
	retryAt time.Time
	buf     []byte

	mu       sync.Mutex
	speed    float64
	dropped  []int
	restarts int
	listed   []rungSpec // the rungs of the running transcoder, for health
	// outs are the rungs by height, kept across restarts; written on
	// the reader's goroutine under mu.
	outs map[int]*hls.Rung
	pid  int // of the running ffmpeg, 0 for none
}

var _ streamcore.Reader = (*transcoder)(nil)

func newTranscoder(cfg *ladderConfig, showID int64, log *slog.Logger, pkg *hls.Packager) *transcoder {
	return &transcoder{cfg: cfg, showID: showID, log: log.With("show", showID), pkg: pkg,
		outs: map[int]*hls.Rung{}, pause: restartPause}
}

// Tracks takes the source's tracks: the rungs are those below its
// height. A change of configuration restarts ffmpeg, fed a new header.
func (t *transcoder) Tracks(tr streamcore.Tracks) error {
	changed := t.tracks.Video != nil && (tr.Video != t.tracks.Video || tr.Audio != t.tracks.Audio)
	t.tracks = tr
	if tr.Video == nil || len(tr.Video.SPS) == 0 {
		t.stop(true)
		return nil
	}
	if t.active == nil && len(t.dropped) == 0 {
		_, h, err := hls.SPSResolution(tr.Video.SPS[0])
		if err != nil {
			t.log.Warn("live: transcode: unreadable picture size; no ladder", "err", err)
			return nil
		}
		t.active = t.cfg.rungsBelow(h)
		if len(t.active) == 0 {
			t.log.Info("live: transcode: the source is no higher than every rung; no ladder", "height", h)
		}
	}
	if changed {
		t.stop(true)
	}
	return nil
}

// Unit feeds ffmpeg, starting it at a keyframe when it is not running
// (and its pause after a crash is over), and checks on it.
func (t *transcoder) Unit(u *streamcore.Unit) error {
	if len(t.active) == 0 || t.tracks.Video == nil {
		return nil
	}
	if t.proc != nil {
		select {
		case <-t.proc.exited:
			t.crashed()
		default:
		}
	}
	if t.proc != nil && t.proc.overloaded.Load() {
		t.dropHighest()
	}
	if t.proc == nil {
		if !u.Video || !u.Key || time.Now().Before(t.retryAt) || len(t.active) == 0 {
			return nil
		}
		if err := t.start(u.DTS); err != nil {
			t.log.Error("live: transcode: start ffmpeg", "err", err)
			t.retry()
			return nil
		}
	}
	if err := t.write(u); err != nil {
		t.crashed()
	}
	return nil
}

// Close ends ffmpeg and finishes the rungs' segments.
func (t *transcoder) Close() {
	t.stop(false)
	for _, r := range t.outs {
		if err := r.Close(false); err != nil {
			t.log.Error("live: transcode: close rung", "rung", r.Name(), "err", err)
		}
	}
}

// start runs ffmpeg for the active rungs; first is the DTS of the
// keyframe it starts at.
func (t *transcoder) start(first int64) error {
	p, err := startFFmpeg(t.cfg, t.active, t.tracks.Audio != nil, first-flvBase, t.log)
	if err != nil {
		return err
	}
	t.mu.Lock()
	for i, spec := range t.active {
		r := t.outs[spec.height]
		if r == nil {
			r = t.pkg.Rung(spec.height, t.tracks.Audio)
			t.outs[spec.height] = r
		}
		p.demux(i, r)
	}
	t.listed = append([]rungSpec(nil), t.active...)
	t.pid = p.cmd.Process.Pid
	t.mu.Unlock()
	p.progress(t)
	t.proc = p
	t.buf = appendFLVHeader(t.buf[:0], t.tracks)
	return nil
}

// write sends one unit to ffmpeg as an FLV tag (a header before the
// first).
func (t *transcoder) write(u *streamcore.Unit) error {
	ts := u.DTS - t.proc.base
	if ts < 0 {
		return nil
	}
	if u.Video {
		t.buf = appendVideoTag(t.buf, ts, u)
	} else {
		t.buf = appendAudioTag(t.buf, ts, 1, u.AAC)
	}
	_, err := t.proc.stdin.Write(t.buf)
	t.buf = t.buf[:0]
	return err
}

// stop ends ffmpeg, if running, and waits for its rungs' last units;
// with pause the rungs' segments in progress are finished (a restart
// follows).
func (t *transcoder) stop(pause bool) {
	if t.proc == nil {
		return
	}
	t.proc.stop()
	t.proc = nil
	t.mu.Lock()
	t.speed, t.pid = 0, 0
	t.mu.Unlock()
	if pause {
		for _, r := range t.outs {
			if err := r.Pause(); err != nil {
				t.log.Error("live: transcode: pause rung", "rung", r.Name(), "err", err)
			}
		}
	}
}

// crashed handles an ffmpeg that ended by itself: its rungs pause and it
// starts again after a pause that doubles with each crash in a row.
func (t *transcoder) crashed() {
	ran := time.Since(t.proc.started)
	tail := t.proc.stderr.String()
	t.stop(true)
	if ran >= healthyRun {
		t.pause = restartPause
	}
	t.log.Warn("live: transcode: ffmpeg stopped; starting again", "after", t.pause.String(), "stderr", tail)
	t.retry()
}

func (t *transcoder) retry() {
	t.retryAt = time.Now().Add(t.pause)
	t.pause = min(2*t.pause, maxRestartPause)
	t.mu.Lock()
	t.restarts++
	t.mu.Unlock()
}

// dropHighest gives up the highest rung of an overloaded transcoder: it
// leaves the master playlists and ffmpeg starts again without it at the
// next keyframe.
func (t *transcoder) dropHighest() {
	t.stop(true)
	gone := t.active[0]
	t.active = t.active[1:]
	if r := t.outs[gone.height]; r != nil {
		if err := r.Close(true); err != nil {
			t.log.Error("live: transcode: drop rung", "rung", r.Name(), "err", err)
		}
	}
	t.mu.Lock()
	delete(t.outs, gone.height)
	t.dropped = append(t.dropped, gone.height)
	t.listed = nil
	t.mu.Unlock()
	t.log.Warn("live: transcode: slower than real time; highest rung dropped", "rung", gone.height, "left", len(t.active))
}

// health is the transcoder's state for the show's health.
func (t *transcoder) health() *shows.TranscodeHealth {
	t.mu.Lock()
	h := &shows.TranscodeHealth{Speed: t.speed, Rungs: []shows.RungHealth{},
		Dropped: append([]int{}, t.dropped...), Restarts: t.restarts}
	for _, spec := range t.listed {
		rh := shows.RungHealth{Height: spec.height, TargetBitrate: int(spec.bitrate / 1000)}
		if r := t.outs[spec.height]; r != nil {
			_, avg, fps := r.Measured()
			rh.Bitrate, rh.FPS = int((avg+500)/1000), fps
		}
		h.Rungs = append(h.Rungs, rh)
	}
	t.mu.Unlock()
	return h
}

// setSpeed records ffmpeg's speed (from the progress goroutine).
func (t *transcoder) setSpeed(s float64) {
	t.mu.Lock()
	t.speed = s
	t.mu.Unlock()
}

// ffmpegProc is one run of ffmpeg with its pipes.
type ffmpegProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	outs    []*os.File // read ends, one per rung
	prog    *os.File
	base    int64 // ms: the units' DTS minus the FLV timestamps
	started time.Time
	stderr  *tailBuffer
	log     *slog.Logger
	exited  chan struct{}
	done    sync.WaitGroup // the demuxers and the progress reader

	overloaded atomic.Bool
}

func startFFmpeg(cfg *ladderConfig, rungs []rungSpec, audio bool, base int64, log *slog.Logger) (*ffmpegProc, error) {
	cmd := exec.Command(cfg.ffmpeg, cfg.ffmpegArgs(rungs, audio)...)
	p := &ffmpegProc{cmd: cmd, base: base, stderr: &tailBuffer{max: 4096}, log: log, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p.stdin = stdin
	var writeEnds []*os.File
	closeAll := func() {
		for _, f := range writeEnds {
			f.Close()
		}
		for _, f := range p.outs {
			f.Close()
		}
		if p.prog != nil {
			p.prog.Close()
		}
	}
	for range len(rungs) + 1 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		writeEnds = append(writeEnds, w)
		if len(p.outs) < len(rungs) {
			p.outs = append(p.outs, r)
		} else {
			p.prog = r
		}
	}
	cmd.ExtraFiles = writeEnds
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	for _, w := range writeEnds {
		w.Close()
	}
	p.started = time.Now()
	go func() {
		cmd.Wait()
		if st := cmd.ProcessState; st != nil {
			log.Info("live: transcode: ffmpeg ended", "ran", time.Since(p.started).Round(time.Millisecond).String(),
				"cpu", (st.UserTime() + st.SystemTime()).String(), "state", st.String())
		}
		close(p.exited)
	}()
	return p, nil
}

// demux reads rung i's FLV into r on a goroutine of its own.
func (p *ffmpegProc) demux(i int, r *hls.Rung) {
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		f := p.outs[i]
		defer f.Close()
		if err := p.demuxRung(bufio.NewReaderSize(f, 64<<10), r); !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
			p.log.Warn("live: transcode: read rung", "rung", r.Name(), "err", err)
		}
		io.Copy(io.Discard, f) // never leave ffmpeg blocked on a full pipe
	}()
}

// rungSlab is the size of the slabs the FLV reader reads a rung's tags
// into: one allocation for some two seconds of a 360p rung, none of
// them copied again (Rung.Video copies what it keeps; the interleaver
// holds the tags' own bytes while it waits).
const rungSlab = 256 << 10

// demuxRung reads a rung's FLV, as ffmpeg writes it, into r. A tag that
// does not parse is skipped; ffmpeg writes none.
func (p *ffmpegProc) demuxRung(src io.Reader, r *hls.Rung) error {
	fr, err := flv.NewReader(src)
	if err != nil {
		return err
	}
	fr.SlabSize = rungSlab
	var (
		clk flvClock
		avc *flv.AVCConfig
		aac bool // the AAC sequence header has come
		mix = rungInterleaver{audio: fr.Header.HasAudio}
	)
	// The rung's timestamps are the FLV's fed to ffmpeg (it copies them,
	// -copyts) in milliseconds; unwrapped, with the FLV's base added
	// back, they are the source's, and times 90 on its 90 kHz timeline.
	at := func(ts uint32) int64 { return (clk.at(ts) + p.base) * 90 }
	for {
		tag, err := fr.ReadTag()
		if err != nil {
			return errors.Join(err, mix.flush(r, math.MaxInt64))
		}
		switch tag.Type {
		case flv.TagVideo:
			v, err := flv.ParseVideoTag(tag.Data)
			if err != nil || v.CodecID != flv.CodecAVC {
				continue
			}
			switch v.PacketType {
			case flv.AVCSequenceHeader:
				if c, err := flv.ParseAVCConfig(v.Data); err == nil && len(c.SPS) > 0 && len(c.PPS) > 0 {
					avc = &c
				}
			case flv.AVCNALU:
				if avc == nil {
					continue
				}
				au, err := rungAccessUnit(v.Data, avc)
				if err != nil || len(au) == 0 {
					continue
				}
				dts := at(tag.Timestamp)
				if err := mix.video(r, dts+int64(v.CompositionTime)*90, dts, au); err != nil {
					return err
				}
			}
		case flv.TagAudio:
			a, err := flv.ParseAudioTag(tag.Data)
			if err != nil || a.SoundFormat != flv.SoundFormatAAC {
				continue
			}
			switch {
			case a.PacketType == flv.AACSequenceHeader:
				_, err := flv.ParseAudioSpecificConfig(a.Data)
				aac = err == nil
			case a.PacketType == flv.AACRaw && aac && len(a.Data) > 0:
				if err := mix.frame(r, at(tag.Timestamp), a.Data); err != nil {
					return err
				}
			}
		}
	}
}

// rungAccessUnit splits a picture's length-prefixed NAL units (slices of
// data, not copies). ffmpeg's FLV muxer has the encoder put the SPS and
// PPS in the sequence header only (global headers), where the MPEG-TS
// path had them before every IDR picture: the rung opens at its first
// keyframe with them, and every keyframe begins a segment that must
// decode on its own, so an IDR picture without its own gets them from
// the configuration, first, as the encoder would have written them.
func rungAccessUnit(data []byte, avc *flv.AVCConfig) ([][]byte, error) {
	au, err := flv.AppendNALUs(make([][]byte, 0, 4), data, avc.NALULengthSize)
	if err != nil {
		return nil, err
	}
	idr, sps, pps := flv.ScanAccessUnit(au)
	if !idr || sps && pps {
		return au, nil
	}
	out := make([][]byte, 0, len(avc.SPS)+len(avc.PPS)+len(au))
	out = append(out, avc.SPS...)
	out = append(out, avc.PPS...)
	return append(out, au...), nil
}

// flvClock unwraps FLV timestamps: ffmpeg's muxer writes 31 bits of
// milliseconds (24.8 days), which a show may outlast.
type flvClock struct {
	last int64
	seen bool
}

const flvWrap = 1 << 31

// at is the unwrapped time (ms) of a timestamp: the nearest, modulo
// 2^31, to the last one's.
func (c *flvClock) at(ts uint32) int64 {
	v := int64(ts) & (flvWrap - 1)
	if !c.seen {
		c.last, c.seen = v, true
		return v
	}
	d := (v - c.last) & (flvWrap - 1)
	if d >= flvWrap/2 {
		d -= flvWrap
	}
	c.last += d
	return c.last
}

// maxAudioWait is how far (90 kHz) the video of a rung may run ahead of
// its audio before it is packaged without waiting for it: the audio of a
// source that stopped sending any.
const maxAudioWait = 90000

// maxPendingBytes bounds the video the interleaver holds, whatever its
// timestamps say: 1 s of a 6 Mb/s rung is under 1 MiB.
const maxPendingBytes = 8 << 20

// rungInterleaver hands a rung its audio and video in timestamp order.
// The packager cuts segments and parts where a video frame begins them:
// an AAC frame that came after the video frame that follows it would go
// into the next segment, leaving the one before it with audio that ends
// short of its video. hls.js then finds its buffer short of the
// segment's end and loads the segment again and again (issue #32: the
// rung played at 0.65× real time, 15 s behind the source, when ffmpeg's
// MPEG-TS muxer wrote each AAC frame behind the next video frame). So
// video waits, here, for the audio up to its time. ffmpeg's FLV muxer
// interleaves by decoding time, so the wait is short, but nothing in the
// format promises it.
type rungInterleaver struct {
	audio   bool // the rung has an audio track
	pending []rungFrame
	bytes   int // of the pending frames
}

type rungFrame struct {
	pts, dts int64
	au       [][]byte
	size     int
}

// video takes a video access unit: packaged now without audio to wait
// for, else queued until the audio reaches its time. The caller gives
// au's slices away: it must not write over them.
func (m *rungInterleaver) video(r *hls.Rung, pts, dts int64, au [][]byte) error {
	if !m.audio {
		return r.Video(pts, dts, au)
	}
	size := 0
	for _, n := range au {
		size += len(n)
	}
	m.pending = append(m.pending, rungFrame{pts: pts, dts: dts, au: au, size: size})
	m.bytes += size
	if m.bytes > maxPendingBytes {
		return m.flushN(r, len(m.pending)-1)
	}
	if dts-m.pending[0].dts > maxAudioWait {
		return m.flush(r, dts-maxAudioWait)
	}
	return nil
}

// frame takes an audio frame: the video up to its time first.
func (m *rungInterleaver) frame(r *hls.Rung, pts int64, raw []byte) error {
	if err := m.flush(r, pts); err != nil {
		return err
	}
	return r.Audio(pts, raw)
}

// flush packages the queued video whose decoding time is up to until.
func (m *rungInterleaver) flush(r *hls.Rung, until int64) error {
	n := 0
	for n < len(m.pending) && m.pending[n].dts <= until {
		n++
	}
	return m.flushN(r, n)
}

// flushN packages the first n queued frames.
func (m *rungInterleaver) flushN(r *hls.Rung, n int) error {
	var err error
	i := 0
	for ; i < n && err == nil; i++ {
		f := m.pending[i]
		m.bytes -= f.size
		err = r.Video(f.pts, f.dts, f.au)
	}
	left := copy(m.pending, m.pending[i:])
	clear(m.pending[left:]) // let go of the frames' slabs
	m.pending = m.pending[:left]
	return err
}

// progress reads ffmpeg's progress reports: the speed, measured over
// the last speedWindow of media and wall time, and whether it has stayed
// under overloadSpeed for overloadFor.
func (p *ffmpegProc) progress(t *transcoder) {
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		defer p.prog.Close()
		var meter speedMeter
		sc := bufio.NewScanner(p.prog)
		for sc.Scan() {
			v, ok := strings.CutPrefix(sc.Text(), "out_time_us=")
			if !ok {
				continue
			}
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil || us <= 0 {
				continue
			}
			speed, measured, slow := meter.add(time.Now(), us)
			if measured {
				t.setSpeed(speed)
			}
			if slow {
				p.overloaded.Store(true)
			}
		}
		io.Copy(io.Discard, p.prog)
	}()
}

// speedMeter turns ffmpeg's progress (media time made, at wall times)
// into its speed over the last speedWindow, and tells when that has
// stayed under overloadSpeed for overloadFor. ffmpeg's own speed counts
// from its start, so its first seconds of probing would weigh for long.
type speedMeter struct {
	window []speedSample
	slowAt time.Time
}

type speedSample struct {
	wall  time.Time
	media int64 // µs
}

// add takes a report of us microseconds made at now; measured is false
// until half a window has passed.
func (m *speedMeter) add(now time.Time, us int64) (speed float64, measured, overloaded bool) {
	m.window = append(m.window, speedSample{now, us})
	for len(m.window) > 2 && now.Sub(m.window[1].wall) >= speedWindow {
		m.window = m.window[1:]
	}
	w := now.Sub(m.window[0].wall)
	if w < speedWindow/2 {
		return 0, false, false
	}
	speed = float64(us-m.window[0].media) / float64(w.Microseconds())
	speed = math.Round(speed*1000) / 1000
	switch {
	case speed >= overloadSpeed:
		m.slowAt = time.Time{}
	case m.slowAt.IsZero():
		m.slowAt = now
	}
	return speed, true, !m.slowAt.IsZero() && now.Sub(m.slowAt) >= overloadFor
}

// stop closes ffmpeg's input, waits for it to finish (killing it after
// a while) and for the rungs' last units.
func (p *ffmpegProc) stop() {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	p.done.Wait()
}

// tailBuffer keeps the last max bytes written (ffmpeg's errors).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// FLV muxing of the core's units, for ffmpeg's input.

func appendFLVHeader(b []byte, tr streamcore.Tracks) []byte {
	flags := byte(0x01)
	if tr.Audio != nil {
		flags |= 0x04
	}
	b = append(b, 'F', 'L', 'V', 1, flags, 0, 0, 0, 9, 0, 0, 0, 0)
	rec := []byte{1, tr.Video.Profile, tr.Video.Compatibility, tr.Video.Level, 0xFF, 0xE0 | byte(len(tr.Video.SPS))}
	for _, s := range tr.Video.SPS {
		rec = binary.BigEndian.AppendUint16(rec, uint16(len(s)))
		rec = append(rec, s...)
	}
	rec = append(rec, byte(len(tr.Video.PPS)))
	for _, s := range tr.Video.PPS {
		rec = binary.BigEndian.AppendUint16(rec, uint16(len(s)))
		rec = append(rec, s...)
	}
	b = appendTag(b, 9, 0, append([]byte{0x17, 0, 0, 0, 0}, rec...))
	if tr.Audio != nil {
		b = appendAudioTag(b, 0, 0, audioSpecificConfig(tr.Audio))
	}
	return b
}

// audioSpecificConfig writes the two bytes of an AAC configuration.
func audioSpecificConfig(c *flv.AudioSpecificConfig) []byte {
	ot, fi := c.ObjectType, c.FrequencyIndex
	if fi > 12 {
		fi = 4 // 44.1 kHz: ffmpeg copies the frames; our ADTS uses the source's configuration
	}
	v := uint16(ot&0x1F)<<11 | uint16(fi&0x0F)<<7 | uint16(c.Channels&0x0F)<<3
	return []byte{byte(v >> 8), byte(v)}
}

func appendVideoTag(b []byte, ts int64, u *streamcore.Unit) []byte {
	start := len(b)
	b = append(b, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	frame := byte(0x27)
	if u.Key {
		frame = 0x17
	}
	cts := u.CTS
	b = append(b, frame, 1, byte(cts>>16), byte(cts>>8), byte(cts))
	for _, n := range u.NALUs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(n)))
		b = append(b, n...)
	}
	return finishTag(b, start, ts)
}

func appendAudioTag(b []byte, ts int64, packet byte, data []byte) []byte {
	start := len(b)
	b = append(b, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xAF, packet)
	b = append(b, data...)
	return finishTag(b, start, ts)
}

func appendTag(b []byte, typ byte, ts int64, body []byte) []byte {
	start := len(b)
	b = append(b, typ, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, body...)
	return finishTag(b, start, ts)
}

// finishTag fills the size and timestamp of the tag begun at start and
// appends its PreviousTagSize.
func finishTag(b []byte, start int, ts int64) []byte {
	size := len(b) - start - 11
	b[start+1], b[start+2], b[start+3] = byte(size>>16), byte(size>>8), byte(size)
	b[start+4], b[start+5], b[start+6], b[start+7] = byte(ts>>16), byte(ts>>8), byte(ts), byte(ts>>24)
	return binary.BigEndian.AppendUint32(b, uint32(size+11))
}

// String names the rungs, for logs.
func (r rungSpec) String() string { return fmt.Sprintf("%dp@%dk", r.height, r.bitrate/1000) }
