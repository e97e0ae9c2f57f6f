package hls

import (
	"log/slog"
	"os"
	"testing"
	"time"
)

// FuzzPackager feeds arbitrary tags to a Packager: it may refuse them, but
// must not panic or write outside its directory. Each input writes files,
// so run it with -fuzzminimizetime 1s: minimising the many inputs that find
// new coverage otherwise takes most of the time.
func FuzzPackager(f *testing.F) {
	// Input framing: kind byte (even video, odd audio), timestamp delta
	// byte, length byte, body.
	frame := func(video bool, dt byte, body []byte) []byte {
		k := byte(1)
		if video {
			k = 0
		}
		return append([]byte{k, dt, byte(len(body))}, body...)
	}
	var seed []byte
	seed = append(seed, frame(true, 0, videoSeqHeader())...)
	seed = append(seed, frame(false, 0, aacSeqHeader)...)
	for i := range 60 {
		seed = append(seed, frame(true, 40, videoFrame(i%25 == 0))...)
		seed = append(seed, frame(false, 0, aacFrame())...)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, in []byte) {
		dir, err := os.MkdirTemp("", "fuzzhls")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		pkg, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler), noSync: true})
		if err != nil {
			t.Fatal(err)
		}
		p := NewFLVFeed(pkg, 100*time.Millisecond)
		var ts int64
		for len(in) >= 3 {
			kind, dt, n := in[0], in[1], int(in[2])
			in = in[3:]
			n = min(n, len(in))
			body := in[:n]
			in = in[n:]
			ts += int64(int8(dt)) * 10
			if kind%2 == 0 {
				p.Video(ts, body)
			} else {
				p.Audio(ts, body)
			}
		}
		p.Close()
	})
}
