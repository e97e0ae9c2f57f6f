package hls

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/onair/onair/modules/live/rtmp"
)

// benchSeconds is the media each iteration of BenchmarkIngest packages:
// the 30 s a publisher streams in bench/live.
const benchSeconds = 30

// recordedStream is what an encoder like bench/live's input sends, as RTMP
// chunks of 4096 bytes (FFmpeg's chunk size): 720p30-sized H.264 frames at
// ~2.4 Mb/s with a keyframe every 2 s, and 128 kb/s AAC, interleaved by
// timestamp, after the sequence headers. The frames are opaque NAL units
// of realistic sizes; the packager never decodes slices.
func recordedStream(tb testing.TB, seconds int) []byte {
	tb.Helper()
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	cw := rtmp.NewChunkWriter(bw)
	write := func(m *rtmp.Message) {
		if err := cw.WriteMessage(m); err != nil {
			tb.Fatal(err)
		}
	}
	write(rtmp.SetChunkSizeMessage(4096))
	if err := cw.SetChunkSize(4096); err != nil {
		tb.Fatal(err)
	}
	write(&rtmp.Message{ChunkStreamID: 6, Type: rtmp.TypeVideo, StreamID: 1, Payload: videoSeqHeader()})
	write(&rtmp.Message{ChunkStreamID: 4, Type: rtmp.TypeAudio, StreamID: 1, Payload: aacSeqHeader})
	frame := func(idr bool, size int) []byte {
		head, nalType := byte(0x27), byte(0x41)
		if idr {
			head, nalType = 0x17, 0x65
		}
		b := []byte{head, 1, 0, 0, 0, byte(size >> 24), byte(size >> 16), byte(size >> 8), byte(size), nalType}
		for i := 1; i < size; i++ {
			b = append(b, byte(i*31+7)|1)
		}
		return b
	}
	idr, inter := frame(true, 60_000), frame(false, 9_000)
	audio := append([]byte{0xAF, 1}, bytes.Repeat([]byte{0x21}, 370)...)
	ms := int64(seconds) * 1000
	var v, a int64
	for {
		vt := v * 1000 / 30
		at := a * 1024 * 1000 / 44100
		if vt >= ms && at >= ms {
			break
		}
		if vt < ms && vt <= at {
			body := inter
			if v%60 == 0 {
				body = idr
			}
			write(&rtmp.Message{ChunkStreamID: 6, Type: rtmp.TypeVideo, StreamID: 1, Timestamp: uint32(vt), Payload: body})
			v++
			continue
		}
		write(&rtmp.Message{ChunkStreamID: 4, Type: rtmp.TypeAudio, StreamID: 1, Timestamp: uint32(at), Payload: audio})
		a++
	}
	if err := cw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heldFiles is a Files that drops what it is given, as a server's memory
// holds the live edge: the packager's side of it only.
type heldFiles struct{}

func (heldFiles) Put(string, []byte, time.Time) {}
func (heldFiles) Remove(string)                 {}

// BenchmarkIngest is the ingest path of one publisher without the network:
// RTMP chunks reassembled by rtmp.ChunkReader, FLV tags parsed and packaged
// into both renditions, segments written to disk as in production: with
// LL-HLS parts into memory (Files, the server's default), with parts on
// disk (no Files: ONAIR_HLS_MEMORY_MB=0), and without parts.
// cpu-s/stream is the process CPU time (user+system, what bench/live's CPU
// column counts) per 30 s stream.
func BenchmarkIngest(b *testing.B) {
	for _, c := range []struct {
		name  string
		part  time.Duration
		files Files
	}{{"parts-memory", 0, heldFiles{}}, {"parts", 0, nil}, {"noparts", -1, nil}} {
		b.Run(c.name, func(b *testing.B) {
			raw := recordedStream(b, benchSeconds)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			var (
				cpu time.Duration
				n   int
			)
			for b.Loop() {
				n++
				dir := b.TempDir()
				before := cpuTime(b)
				pkg, err := Open(dir, Options{PartDuration: c.part, Files: c.files, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				p := NewFLVFeed(pkg, 0)
				p.Async = true
				cr := rtmp.NewChunkReader(bufio.NewReaderSize(bytes.NewReader(raw), 64<<10), rtmp.Limits{})
				for {
					m, err := cr.ReadMessage()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					switch m.Type {
					case rtmp.TypeVideo:
						err = p.Video(int64(m.Timestamp), m.Payload)
					case rtmp.TypeAudio:
						err = p.Audio(int64(m.Timestamp), m.Payload)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Close(); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - before
			}
			b.ReportMetric(cpu.Seconds()/float64(n), "cpu-s/stream")
		})
	}
}
