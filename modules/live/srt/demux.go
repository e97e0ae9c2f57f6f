package srt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/streamcore"
)

// MaxProbeBytes caps the MPEG-TS read (and kept) before the program map
// and the first AAC frame have come: the reader keeps all of it to read
// it again once the tracks are known (and itself refuses past 1 MiB).
const MaxProbeBytes = 1<<20 - 4096

// Refusals of a transport stream.
var (
	// ErrProbeTooLong: no program map (or no first frame of the AAC
	// track it announces) within MaxProbeBytes.
	ErrProbeTooLong = errors.New("srt: no program map within the first MiB of MPEG-TS")
	// ErrNoTracks: the program has neither an H.264 nor an AAC track.
	ErrNoTracks = errors.New("srt: the MPEG-TS program has no H.264 or AAC track")
)

const (
	tsClock  = 90000 // Hz, PTS and DTS
	tsMax    = 1<<33 - 1
	aacFrame = 1024 // samples per AAC frame
)

// Demuxer turns the MPEG-TS of one publication into stream core units:
// each H.264 access unit (its NAL units, its SPS and PPS kept in band) and
// each AAC frame of the ADTS stream, on one millisecond timeline, with a
// decoder configuration before the first unit of each track and again when
// the SPS or PPS change. It is not safe for concurrent use.
type Demuxer struct {
	ts    *tsReader
	src   *budget
	emit  func(streamcore.Unit) error
	now   func() time.Time
	clock mpegts.TimeDecoder // one for all tracks: they share the program clock

	video, audio bool
	avc          *flv.AVCConfig
	asc          *flv.AudioSpecificConfig
	ascSent      bool
	sampleRate   int64
	errs         uint64
	nalus        [][]byte               // scratch of h264
	adts         mpeg4audio.ADTSPackets // scratch of aacPES
	slab         []byte                 // where the next units' bytes go (keep)
}

// slabSize is the size of the slabs the units' bytes are copied into,
// as streamcore.FLV does for RTMP: a picture of its own allocation (10
// to 30 KiB at 2.5 Mb/s) takes a span from the runtime's central lists
// each. A unit larger than half a slab gets its own allocation; a slab
// lives while any of its units does.
const slabSize = 128 << 10

// keep reserves n bytes for a unit's own copy: append to the slice
// returned, at most n bytes.
func (d *Demuxer) keep(n int) []byte {
	if n > slabSize/2 {
		return make([]byte, 0, n)
	}
	if cap(d.slab)-len(d.slab) < n {
		d.slab = make([]byte, 0, slabSize)
	}
	start := len(d.slab)
	d.slab = d.slab[:start+n]
	return d.slab[start : start : start+n]
}

// NewDemuxer reads r up to the program map (at most MaxProbeBytes) and
// returns a demuxer whose Read hands each unit to emit. A program whose
// video or audio OnAir cannot package is a streamcore.CodecError; one
// with neither H.264 nor AAC is ErrNoTracks. now stamps the units' arrival
// (time.Now when nil).
func NewDemuxer(r io.Reader, emit func(streamcore.Unit) error, now func() time.Time) (*Demuxer, error) {
	if now == nil {
		now = time.Now
	}
	d := &Demuxer{src: &budget{r: r, left: MaxProbeBytes}, emit: emit, now: now}
	// mediacommon's reader finds the program map and the tracks; the bytes
	// it read are then read again by the data path (tsread.go).
	rec := &recorder{r: d.src}
	probe := mpegts.Reader{R: rec}
	if err := probe.Initialize(); err != nil {
		if errors.Is(err, errBudget) {
			return nil, ErrProbeTooLong
		}
		return nil, err
	}
	d.src.left = -1
	d.ts = newTSReader(io.MultiReader(bytes.NewReader(rec.buf), d.src), func() { d.errs++ })
	var badVideo, badAudio *flv.Codec
	for _, t := range probe.Tracks() {
		switch c := t.Codec.(type) {
		case *mpegts.CodecH264:
			if !d.video {
				d.video = true
				d.ts.track(t.PID, d.h264PES)
			}
		case *mpegts.CodecMPEG4Audio:
			if !d.audio {
				if err := d.audioConfig(c); err != nil {
					return nil, err
				}
				d.audio = true
				d.ts.track(t.PID, d.aacPES)
			}
		default:
			if codec, ok := unsupported(t.Codec); ok {
				if codec.Audio && badAudio == nil {
					badAudio = &codec
				} else if !codec.Audio && badVideo == nil {
					badVideo = &codec
				}
			}
		}
	}
	switch {
	case !d.video && badVideo != nil:
		return nil, streamcore.CodecError{Codec: *badVideo}
	case !d.audio && badAudio != nil:
		return nil, streamcore.CodecError{Codec: *badAudio}
	case !d.video && !d.audio:
		return nil, ErrNoTracks
	}
	return d, nil
}

// unsupported names, in FLV's terms, a codec of the program OnAir cannot
// package; ok is false for a track that is not audio or video (KLV data,
// subtitles), which is ignored.
func unsupported(c mpegts.Codec) (flv.Codec, bool) {
	switch c.(type) {
	case *mpegts.CodecH265:
		return flv.Codec{FourCC: "hvc1"}, true
	case *mpegts.CodecMPEG4Video:
		return flv.Codec{FourCC: "mp4v"}, true
	case *mpegts.CodecMPEG1Video:
		return flv.Codec{FourCC: "mp2v"}, true
	case *mpegts.CodecOpus:
		return flv.Codec{Audio: true, FourCC: "Opus"}, true
	case *mpegts.CodecMPEG1Audio:
		return flv.Codec{Audio: true, FourCC: ".mp3"}, true
	case *mpegts.CodecAC3:
		return flv.Codec{Audio: true, FourCC: "ac-3"}, true
	case *mpegts.CodecMPEG4AudioLATM:
		return flv.Codec{Audio: true, FourCC: "mp4a", Feature: "LATM"}, true
	}
	return flv.Codec{}, false
}

// Tracks reports which tracks the program has that OnAir packages.
func (d *Demuxer) Tracks() (video, audio bool) { return d.video, d.audio }

// DecodeErrors counts the damage the demuxer skipped: packets lost or
// garbled beyond what SRT recovered, PES without timestamps.
func (d *Demuxer) DecodeErrors() uint64 { return d.errs }

// Read reads the next piece of the stream and emits the units it
// completes. It returns the reader's error (io.EOF at the end) or the
// first error emit returned.
func (d *Demuxer) Read() error { return d.ts.Read() }

// h264PES splits the access unit of one PES into its NAL units.
func (d *Demuxer) h264PES(pts, dts int64, data []byte) error {
	nalus, ok := splitAnnexB(d.nalus[:0], data)
	d.nalus = nalus
	if !ok {
		d.errs++
		return nil
	}
	return d.h264(pts, dts, nalus)
}

// aacPES splits the ADTS frames of one PES.
func (d *Demuxer) aacPES(pts, dts int64, data []byte) error {
	clear(d.adts)
	d.adts = d.adts[:0]
	if pts != dts || d.adts.Unmarshal(data) != nil {
		d.errs++
		return nil
	}
	return d.aac(pts, d.adts)
}

// audioConfig takes the AAC configuration the reader found in the first
// ADTS header, through FLV's parser so that it is checked as an RTMP
// sequence header is.
func (d *Demuxer) audioConfig(c *mpegts.CodecMPEG4Audio) error {
	raw, err := c.Config.Marshal()
	if err != nil {
		return fmt.Errorf("srt: aac configuration: %w", err)
	}
	cfg, err := flv.ParseAudioSpecificConfig(raw)
	if err != nil {
		return fmt.Errorf("srt: aac configuration: %w", err)
	}
	if _, err := cfg.AppendADTS(nil, 0); err != nil || cfg.SampleRate <= 0 {
		return fmt.Errorf("srt: aac configuration: unusable (%v)", err)
	}
	d.asc, d.sampleRate = &cfg, int64(cfg.SampleRate)
	return nil
}

// times unwraps a PES's timestamps onto the stream's timeline (90 kHz).
func (d *Demuxer) times(pts, dts int64) (dts90, cts90 int64) {
	dts90 = d.clock.Decode(dts)
	cts90 = (pts - dts) & tsMax
	if cts90 > tsMax/2 {
		cts90 -= tsMax + 1
	}
	return dts90, cts90
}

// ms converts 90 kHz ticks to milliseconds, rounding down.
func ms(t int64) int64 {
	if t < 0 {
		return -((-t + 89) / 90)
	}
	return t / 90
}

// h264 handles one H.264 access unit.
func (d *Demuxer) h264(pts, dts int64, au [][]byte) error {
	dts90, cts90 := d.times(pts, dts)
	at := d.now()
	size, key := 0, false
	var sps, pps []byte
	for _, n := range au {
		if len(n) == 0 {
			continue
		}
		switch h264.NALUType(n[0] & 0x1f) {
		case h264.NALUTypeAccessUnitDelimiter:
			continue
		case h264.NALUTypeIDR:
			key = true
		case h264.NALUTypeSPS:
			sps = n
		case h264.NALUTypePPS:
			pps = n
		}
		size += len(n)
	}
	if size == 0 {
		d.errs++
		return nil
	}
	if sps != nil && pps != nil && len(sps) >= 4 && d.changed(sps, pps) {
		cfg := &flv.AVCConfig{Profile: sps[1], Compatibility: sps[2], Level: sps[3], NALULengthSize: 4,
			SPS: [][]byte{append([]byte(nil), sps...)}, PPS: [][]byte{append([]byte(nil), pps...)}}
		d.avc = cfg
		if err := d.emit(streamcore.Unit{Video: true, DTS: ms(dts90), AVC: cfg, At: at, Size: len(sps) + len(pps)}); err != nil {
			return err
		}
	}
	// The unit owns its bytes: one copy of the access unit.
	buf := d.keep(size)
	nalus := make([][]byte, 0, len(au))
	for _, n := range au {
		if len(n) == 0 || h264.NALUType(n[0]&0x1f) == h264.NALUTypeAccessUnitDelimiter {
			continue
		}
		start := len(buf)
		buf = append(buf, n...)
		nalus = append(nalus, buf[start:len(buf):len(buf)])
	}
	u := streamcore.Unit{Video: true, DTS: ms(dts90), CTS: int32(ms(dts90+cts90) - ms(dts90)), Key: key, At: at, Size: size}
	if d.avc != nil {
		u.NALUs = nalus // before its configuration, a picture is counted, not packaged
	}
	return d.emit(u)
}

// changed reports whether sps and pps differ from the configuration sent.
func (d *Demuxer) changed(sps, pps []byte) bool {
	return d.avc == nil || string(d.avc.SPS[0]) != string(sps) || string(d.avc.PPS[0]) != string(pps)
}

// aac handles the AAC frames of one PES.
func (d *Demuxer) aac(pts int64, aus mpeg4audio.ADTSPackets) error {
	pts90, _ := d.times(pts, pts)
	at := d.now()
	if !d.ascSent {
		d.ascSent = true
		if err := d.emit(streamcore.Unit{DTS: ms(pts90), ASC: d.asc, At: at, Size: 2}); err != nil {
			return err
		}
	}
	for i, p := range aus {
		au := p.AU
		if len(au) == 0 {
			continue
		}
		t := pts90 + int64(i)*aacFrame*tsClock/d.sampleRate
		if err := d.emit(streamcore.Unit{DTS: ms(t), AAC: append(d.keep(len(au)), au...), At: at, Size: len(au)}); err != nil {
			return err
		}
	}
	return nil
}

// recorder keeps a copy of what the probe reads, for the data path to
// read again.
type recorder struct {
	r   io.Reader
	buf []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// errBudget ends the probe's reads past MaxProbeBytes.
var errBudget = errors.New("srt: probe budget spent")

// budget is a reader that fails after left bytes (never when left < 0).
type budget struct {
	r    io.Reader
	left int
}

func (b *budget) Read(p []byte) (int, error) {
	if b.left < 0 {
		return b.r.Read(p)
	}
	if b.left == 0 {
		return 0, errBudget
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= n
	return n, err
}
