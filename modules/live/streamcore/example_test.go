package streamcore_test

import (
	"fmt"
	"time"

	"github.com/onair/onair/modules/live/streamcore"
)

// keyframeCounter is a reader: it counts the pictures and keyframes of a
// stream. A recorder, a transcoder or a restreamer has the same shape.
type keyframeCounter struct {
	pictures, keyframes int
	done                chan struct{}
}

func (k *keyframeCounter) Tracks(t streamcore.Tracks) error {
	fmt.Println("video:", t.Video != nil, "audio:", t.Audio != nil)
	return nil
}

func (k *keyframeCounter) Unit(u *streamcore.Unit) error {
	if u.Video {
		k.pictures++
		if u.Key {
			k.keyframes++
		}
	}
	return nil
}

func (k *keyframeCounter) Close() { close(k.done) }

// A source (here FLV tag bodies, as the RTMP ingest gets them) parses
// each tag once and writes the unit to the stream; readers subscribe,
// from Decided or at any time, and get every unit on their own goroutine.
func Example() {
	counter := &keyframeCounter{done: make(chan struct{})}
	var s *streamcore.Stream
	s = streamcore.New(time.Now(), streamcore.Options{
		TrackWait: 5 * time.Second,
		Decided: func(streamcore.Tracks) error {
			s.AddReader(counter, streamcore.ReaderOptions{Name: "counter"})
			return nil
		},
	})
	var src streamcore.FLV
	tags := [][]byte{
		{0x17, 0, 0, 0, 0, 0x01, 0x42, 0xC0, 0x0D, 0xFF, 0xE1, 0x00, 0x04, 0x67, 0x42, 0xC0, 0x0D, 0x01, 0x00, 0x02, 0x68, 0xCE}, // AVC sequence header
		{0x17, 1, 0, 0, 0, 0, 0, 0, 2, 0x65, 0x88}, // IDR picture
		{0x27, 1, 0, 0, 0, 0, 0, 0, 2, 0x41, 0x9A}, // P picture
	}
	if err := s.Metadata(map[string]any{"videocodecid": 7.0}); err != nil {
		fmt.Println(err)
	}
	for i, body := range tags {
		u, ok, err := src.Video(int64(i*40), body, time.Now())
		if err == nil && ok {
			err = s.Write(u)
		}
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
	}
	s.Close()
	<-counter.done
	fmt.Println(counter.pictures, "pictures,", counter.keyframes, "keyframe;", src.Parsed(), "tags parsed")
	// Output:
	// video: true audio: false
	// 2 pictures, 1 keyframe; 3 tags parsed
}
