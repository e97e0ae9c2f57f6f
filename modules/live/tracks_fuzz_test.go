package live

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/onair/onair/modules/live/amf0"
	"github.com/onair/onair/modules/live/rtmp"
)

// FuzzTrackProbe drives the track decision with hostile input: an AMF0
// onMetaData, then tags whose type, timestamp step and body come from the
// fuzzer. It must never panic, refuse only with a status naming a codec,
// never replay more than it was given, and replay sequence headers first.
// For an audio-only show (audioOnly) video tags go where stream.media sends
// them, to silent: no video is ever buffered, and no video codec refused.
func FuzzTrackProbe(f *testing.F) {
	meta, _ := amf0.Encode(nil, amf0.ECMAArray{"videocodecid": 7.0, "audiocodecid": 10.0})
	hevc, _ := amf0.Encode(nil, amf0.ECMAArray{"videocodecid": float64(0x68766331)})
	// Tags: 1 byte flags (bit 0 video, bit 1 long step), 1 byte length, body.
	f.Add(meta, []byte{0, 4, 0xAF, 0, 0x12, 0x10, 1, 6, 0x17, 0, 0, 0, 0, 1}, false)
	f.Add(hevc, []byte{0, 2, 0xAF, 1}, false)
	f.Add(hevc, []byte{1, 2, 0x1C, 0, 0, 4, 0xAF, 0, 0x12, 0x10}, true)
	f.Add([]byte{}, []byte{1, 5, 0x1C, 0, 0, 0, 0, 3, 2, 0xAF, 1}, false)
	f.Add([]byte{}, []byte{1, 9, 0x97, 1, 0xAA, 0xBB, 1, 'a', 'v', 'c', '1'}, true)
	f.Fuzz(func(t *testing.T, metaBytes, tags []byte, audioOnly bool) {
		p := newTrackProbe(time.Second, audioOnly)
		vals, _ := amf0.DecodeAll(metaBytes)
		for _, v := range vals {
			if m, ok := v.(amf0.ECMAArray); ok {
				if err := p.metadata(m); err != nil {
					checkRefusal(t, err, audioOnly)
					return
				}
			}
		}
		var ts int64
		given := 0
		for len(tags) >= 2 {
			flags, n := tags[0], int(tags[1])
			tags = tags[2:]
			body := tags[:min(n, len(tags))]
			tags = tags[len(body):]
			ts += 20
			if flags&2 != 0 {
				ts += 700
			}
			if audioOnly && flags&1 != 0 {
				if p.silent(ts) {
					break
				}
				continue
			}
			keep, header, err := classify(flags&1 != 0, body)
			if err != nil {
				var se *rtmp.StatusError
				if errors.As(err, &se) {
					checkRefusal(t, err, audioOnly)
				}
				return
			}
			if !keep {
				continue
			}
			given += len(body)
			if p.add(flags&1 != 0, ts, body, header, time.Now()) {
				break
			}
		}
		if audioOnly && p.videoHeader != nil {
			t.Fatal("an audio-only probe kept a video header")
		}
		out := p.replay()
		var headers []*probeTag
		for _, h := range []*probeTag{p.videoHeader, p.audioHeader} {
			if h != nil {
				headers = append(headers, h)
			}
		}
		total := 0
		for i, tag := range out {
			total += len(tag.body)
			if i < len(headers) && (tag.video != headers[i].video || !bytes.Equal(tag.body, headers[i].body)) {
				t.Fatal("sequence headers are not replayed first")
			}
		}
		if total > given {
			t.Fatalf("replays %d bytes of %d given", total, given)
		}
		h := p.hints()
		if (h["videocodecid"] != nil) != (p.videoHeader != nil) || (h["audiocodecid"] != nil) != (p.audioHeader != nil) {
			t.Fatalf("hints %v do not match the headers", h)
		}
	})
}

func checkRefusal(t *testing.T, err error, audioOnly bool) {
	var se *rtmp.StatusError
	var ce codecError
	if !errors.As(err, &se) || !errors.As(err, &ce) || se.Code != "NetStream.Publish.Rejected" || len(se.Description) > 255 {
		t.Fatalf("refusal %v", err)
	}
	if audioOnly && !ce.codec.Audio {
		t.Fatalf("an audio-only show refused a video codec: %v", err)
	}
}
