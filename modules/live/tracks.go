package live

import (
	"errors"
	"fmt"

	"github.com/onair/onair/modules/live/flv"
	"github.com/onair/onair/modules/live/rtmp"
)

// The RTMP refusals of the stream core's decisions. The core decides the
// tracks (streamcore/probe.go: onMetaData, sequence headers, the late
// header rules) and refuses a codec it cannot package or an audio-only
// show without audio; the RTMP source says so to the encoder with an
// onStatus error it shows its user.

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
