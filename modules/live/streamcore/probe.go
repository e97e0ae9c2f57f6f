package streamcore

import (
	"github.com/onair/onair/modules/live/flv"
)

// Track detection. A stream hands its readers nothing until it knows which
// tracks it has and that OnAir can package their codecs:
//
//   - onMetaData, when the encoder sends it, announces the tracks
//     (videocodecid, audiocodecid); without it both are expected;
//   - a track is there once its decoder configuration (AVC decoder
//     configuration, AAC AudioSpecificConfig) has arrived;
//   - the decision is made when every expected track is there, or when the
//     track wait of media has passed since the first unit with at least
//     one track there (the missing one is started without);
//   - a codec that cannot be packaged, announced or sent, refuses the
//     publication (CodecError);
//   - an audio-only stream expects audio alone: its video is never
//     buffered nor checked, and a publication that sends no audio within
//     the track wait of media is refused (ErrNoAudio).
//
// A track that turns up after the decision reaches the readers as new
// Tracks (the HLS packager starts a discontinuity).

// maxProbeBytes caps what one publication buffers while its tracks are
// decided; reaching it decides at once.
const maxProbeBytes = 16 << 20

// probeRestart is how far timestamps may step back before the probe
// takes it as a restarted clock and decides at once.
const probeRestart = 1000 // ms

// probe buffers a stream's units until its tracks are decided.
type probe struct {
	wait      int64 // ms of media
	audioOnly bool  // the stream takes audio alone

	announced            bool // onMetaData listed the tracks
	wantVideo, wantAudio bool

	started bool  // a media unit has arrived
	first   int64 // its timestamp
	// The first configuration of each track; replayed before the rest.
	videoHeader, audioHeader *Unit
	pending                  []Unit
	size                     int
}

// metadata takes onMetaData's announcement of the tracks. A codec known
// and unsupported is refused; values that name no codec still announce
// the track, whose units are checked when they come.
func (p *probe) metadata(meta map[string]any) error {
	v, hasVideo, knownVideo := flv.MetadataCodec(meta, false)
	a, hasAudio, knownAudio := flv.MetadataCodec(meta, true)
	if p.audioOnly {
		// The video is ignored, whatever its codec.
		hasVideo, knownVideo = false, false
	}
	if knownVideo && !v.Supported() {
		return CodecError{v}
	}
	if knownAudio && !a.Supported() {
		return CodecError{a}
	}
	if hasVideo || hasAudio {
		p.announced, p.wantVideo, p.wantAudio = true, hasVideo, hasAudio
	}
	return nil
}

// silent takes the timestamp of a video unit an audio-only stream ignores
// and reports whether the track wait of media has passed without audio.
func (p *probe) silent(ts int64) bool {
	if !p.started {
		p.started, p.first = true, ts
	}
	span := ts - p.first
	return p.audioHeader == nil && (span >= p.wait || span < -probeRestart)
}

// add buffers a unit and reports whether the tracks are now decided.
func (p *probe) add(u Unit) bool {
	if !p.started {
		p.started, p.first = true, u.DTS
	}
	switch {
	case u.AVC != nil && p.videoHeader == nil:
		p.videoHeader = &u
	case u.ASC != nil && p.audioHeader == nil:
		p.audioHeader = &u
	case u.Video && p.videoHeader == nil, !u.Video && p.audioHeader == nil:
		// A frame of a track without its configuration cannot be
		// decoded.
		return p.decided(u.DTS)
	default:
		p.pending = append(p.pending, u)
	}
	p.size += u.Size
	return p.decided(u.DTS)
}

// decided applies the rules of the file comment at the unit of time ts.
func (p *probe) decided(ts int64) bool {
	video, audio := p.videoHeader != nil, p.audioHeader != nil
	if !video && !audio {
		return false
	}
	needVideo, needAudio := !p.audioOnly, true
	if p.announced {
		needVideo, needAudio = p.wantVideo, p.wantAudio
	}
	if (video || !needVideo) && (audio || !needAudio) {
		return true
	}
	span := ts - p.first
	return span >= p.wait || span < -probeRestart || p.size > maxProbeBytes
}

// tracks are the decided tracks.
func (p *probe) tracks() Tracks {
	var t Tracks
	if p.videoHeader != nil {
		t.Video = p.videoHeader.AVC
	}
	if p.audioHeader != nil {
		t.Audio = p.audioHeader.ASC
	}
	return t
}

// replay lists the buffered units after the decision, in arrival order
// (the first configurations are in tracks()).
func (p *probe) replay() []Unit { return p.pending }
