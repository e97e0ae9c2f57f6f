package live

import (
	"errors"
	"fmt"
	"time"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/rtmp"
)

// Track detection. A publication is packaged, and its show touched, only
// once it is known which tracks it has and that OnAir can package their
// codecs:
//
//   - onMetaData, when the encoder sends it, announces the tracks
//     (videocodecid, audiocodecid); without it both are expected;
//   - a track is there once its sequence header (AVC decoder
//     configuration, AAC AudioSpecificConfig) has arrived;
//   - the decision is made when every expected track is there, or when
//     trackWait of media has passed since the first tag with at least one
//     track there (the missing one is started without);
//   - a codec that cannot be packaged, announced or sent, refuses the
//     publication with an onStatus error naming it;
//   - an audio-only show expects audio alone: its video is never buffered
//     nor checked, and a publication that sends no audio within trackWait
//     of media is refused (errNoAudio).
//
// A track that turns up after the decision joins the A/V rendition after
// a discontinuity (see hls.Packager); the show gets its URL then.

// maxProbeBytes caps what one publication buffers while its tracks are
// decided; reaching it decides at once.
const maxProbeBytes = 16 << 20

// probeRestart is how far timestamps may step back before the probe
// takes it as a restarted clock and decides at once.
const probeRestart = 1000 // ms

// trackProbe buffers a publication until its tracks are decided.
type trackProbe struct {
	wait      int64 // ms of media
	audioOnly bool  // the show takes audio alone

	announced            bool // onMetaData listed the tracks
	wantVideo, wantAudio bool

	started bool  // a media tag has arrived
	first   int64 // its timestamp
	// The first sequence header of each track; replayed before the rest.
	videoHeader, audioHeader *probeTag
	pending                  []probeTag
	size                     int
}

// probeTag is a buffered tag and when it arrived (the wall-clock time of
// the stream's first sample is taken from it).
type probeTag struct {
	video bool
	ts    int64
	at    time.Time
	body  []byte
}

func newTrackProbe(wait time.Duration, audioOnly bool) *trackProbe {
	return &trackProbe{wait: wait.Milliseconds(), audioOnly: audioOnly}
}

// errNoAudio refuses a publication to an audio-only show that sends video
// and no audio.
var errNoAudio = &rtmp.StatusError{
	Code:        "NetStream.Publish.Rejected",
	Description: "This show is audio only and the stream has no audio track: send AAC audio.",
	Err:         errors.New("live: audio-only show without audio"),
}

// unsupportedCodec is the refusal of a publication whose codec cannot be
// packaged. FFmpeg prints the description as "Server error: …".
func unsupportedCodec(c flv.Codec) *rtmp.StatusError {
	kind := "video"
	if c.Audio {
		kind = "audio"
	}
	return &rtmp.StatusError{
		Code:        "NetStream.Publish.Rejected",
		Description: fmt.Sprintf("Unsupported %s codec %s: OnAir takes H.264 video and AAC audio.", kind, c),
		Err:         codecError{c},
	}
}

// codecError carries the refused codec to the log.
type codecError struct{ codec flv.Codec }

func (e codecError) Error() string { return "live: unsupported codec " + e.codec.String() }

// metadata takes onMetaData's announcement of the tracks. A codec known
// and unsupported is refused; values that name no codec still announce
// the track, whose tags are checked when they come.
func (p *trackProbe) metadata(meta map[string]any) error {
	v, hasVideo, knownVideo := flv.MetadataCodec(meta, false)
	a, hasAudio, knownAudio := flv.MetadataCodec(meta, true)
	if p.audioOnly {
		// The video is ignored, whatever its codec.
		hasVideo, knownVideo = false, false
	}
	if knownVideo && !v.Supported() {
		return unsupportedCodec(v)
	}
	if knownAudio && !a.Supported() {
		return unsupportedCodec(a)
	}
	if hasVideo || hasAudio {
		p.announced, p.wantVideo, p.wantAudio = true, hasVideo, hasAudio
	}
	return nil
}

// silent takes the timestamp of a video tag an audio-only show ignores and
// reports whether trackWait of media has passed without any audio.
func (p *trackProbe) silent(ts int64) bool {
	if !p.started {
		p.started, p.first = true, ts
	}
	span := ts - p.first
	return p.audioHeader == nil && (span >= p.wait || span < -probeRestart)
}

// classify checks the codec of a tag and tells whether it is media to
// package and whether it is a sequence header. Errors are refusals
// (*rtmp.StatusError) or malformed tags.
func classify(video bool, body []byte) (keep, header bool, err error) {
	if video {
		c, ok, err := flv.VideoCodec(body)
		if err != nil || !ok {
			return false, false, err // a malformed tag, or a command frame
		}
		if !c.Supported() {
			return false, false, unsupportedCodec(c)
		}
		tag, err := flv.ParseVideoTag(body)
		if err != nil {
			return false, false, err
		}
		return true, tag.PacketType == flv.AVCSequenceHeader, nil
	}
	c, err := flv.AudioCodec(body)
	if err != nil {
		return false, false, err
	}
	if !c.Supported() {
		return false, false, unsupportedCodec(c)
	}
	tag, err := flv.ParseAudioTag(body)
	if err != nil {
		return false, false, err
	}
	if tag.SoundFormat != flv.SoundFormatAAC {
		return false, false, nil // an enhanced AAC packet with nothing to package (sequence end, channel layout)
	}
	return true, tag.PacketType == flv.AACSequenceHeader, nil
}

// add buffers a tag (classified by classify) and reports whether the
// tracks are now decided.
func (p *trackProbe) add(video bool, ts int64, body []byte, header bool, at time.Time) bool {
	if !p.started {
		p.started, p.first = true, ts
	}
	t := probeTag{video: video, ts: ts, at: at}
	switch {
	case header && video && p.videoHeader == nil:
		t.body = append([]byte(nil), body...)
		p.videoHeader = &t
	case header && !video && p.audioHeader == nil:
		t.body = append([]byte(nil), body...)
		p.audioHeader = &t
	case video && p.videoHeader == nil, !video && p.audioHeader == nil:
		// A frame of a track without its configuration cannot be
		// decoded; the packager would drop it.
	default:
		t.body = append([]byte(nil), body...)
		p.pending = append(p.pending, t)
	}
	p.size += len(t.body)
	return p.decided(ts)
}

// decided applies the rules of the file comment at the tag of time ts.
func (p *trackProbe) decided(ts int64) bool {
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

// hints tells the packager the decided tracks, in onMetaData's terms.
func (p *trackProbe) hints() map[string]any {
	h := map[string]any{}
	if p.videoHeader != nil {
		h["videocodecid"] = float64(flv.CodecAVC)
	}
	if p.audioHeader != nil {
		h["audiocodecid"] = float64(flv.SoundFormatAAC)
	}
	return h
}

// replay lists the buffered tags for the packager: the sequence headers
// first, so that it knows every decided track before the first frame,
// then the rest in arrival order.
func (p *trackProbe) replay() []probeTag {
	out := make([]probeTag, 0, len(p.pending)+2)
	for _, h := range []*probeTag{p.videoHeader, p.audioHeader} {
		if h != nil {
			out = append(out, *h)
		}
	}
	return append(out, p.pending...)
}
