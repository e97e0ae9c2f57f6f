package live_test

import (
	"fmt"
	"testing"

	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/live/amf0"
)

// Every RTMP tag is parsed once, into access units, whatever reads the
// stream: the HLS packager, the health statistics and the track decision
// all take the core's units. A publication of N audio and video tags that
// goes live (so the packager made segments of them) counts N parses.
func TestEachTagParsedOnce(t *testing.T) {
	requireTools(t, "ffmpeg")
	rec := recordFLV(t, 6)
	env := onairtest.New(t, onairtest.Options{})
	mod, _ := onairtest.Module[*live.Module](env)
	_, token := env.CreateUser("Parse Once")
	b := onairtest.CreateShow(t, env, token, nil)
	p, st := dialPublisher(t, b.RTMP, b.Key)
	if st["code"] != "NetStream.Publish.Start" {
		t.Fatalf("publish: %v", st)
	}
	if err := p.metadata(amf0.ECMAArray{"videocodecid": 7.0, "audiocodecid": 10.0}); err != nil {
		t.Fatal(err)
	}
	tags := mergeTags(rec.audio, rec.video)
	if err := p.play(tags); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	b.Await(t, "live", isLive)
	want := uint64(len(tags))
	var got uint64
	testload.Poll(t, "every tag parsed", func() error {
		n, ok := mod.ParsedTags(b.ID)
		if got = n; !ok || n < want {
			return fmt.Errorf("%d of %d tags parsed (publisher here: %v)", n, want, ok)
		}
		return nil
	})
	if got != want {
		t.Fatalf("%d tags published, %d parses", want, got)
	}
	if h := health(t, env, b.ID, token); h["video_codec"] != "H.264" || h["audio_codec"] != "AAC" {
		t.Errorf("health from the same units: %v", h)
	}
}
