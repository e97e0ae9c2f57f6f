package srt

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/onair/onair/modules/live/streamcore"
)

// benchStream is an MPEG-TS of seconds of a 2.5 Mb/s stream as the bench
// sends it: 30 pictures a second of about 10 KB (a keyframe with SPS and
// PPS every 60) and 48 kHz AAC, 128 kb/s.
func benchStream(tb testing.TB, seconds int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := &mpegts.Writer{W: &buf, Tracks: []*mpegts.Track{
		{PID: 256, Codec: &mpegts.CodecH264{}},
		{PID: 257, Codec: &mpegts.CodecMPEG4Audio{Config: mpeg4audio.AudioSpecificConfig{
			Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 48000, ChannelCount: 2}}},
	}}
	if err := w.Initialize(); err != nil {
		tb.Fatal(err)
	}
	audio := bytes.Repeat([]byte{0x21}, 340)
	var audioNext int64
	for f := range seconds * 30 {
		dts := int64(f) * 3000
		slice := append([]byte{0x41, 0x9a}, bytes.Repeat([]byte{byte(f | 1)}, 10_000)...)
		au := [][]byte{slice}
		if f%60 == 0 {
			slice[0] = 0x65
			au = [][]byte{testSPS, testPPS, slice}
		}
		if err := w.WriteH264(w.Tracks[0], dts+3000, dts, au); err != nil {
			tb.Fatal(err)
		}
		for audioNext < dts+3000 {
			if err := w.WriteMPEG4Audio(w.Tracks[1], audioNext, [][]byte{audio}); err != nil {
				tb.Fatal(err)
			}
			audioNext += 1024 * 90000 / 48000
		}
	}
	return buf.Bytes()
}

// discardSink takes the units and drops them, inline from its first.
type discardSink struct{ units int }

func (s *discardSink) Write(streamcore.Unit) error { s.units++; return nil }

// BenchmarkListenerStream runs a stream through the listener as the
// socket's goroutine does, on a clock of its own: each datagram handled
// as it comes, a tick every 80 ms (the tick on a LAN at 120 ms of
// latency), the deliveries demuxed on the same goroutine once the first
// unit is out. No socket: what is left is the listener's and the
// demuxer's own work a datagram, and its allocations.
func BenchmarkListenerStream(b *testing.B) {
	const seconds = 10
	ts := benchStream(b, seconds)
	var dgrams [][]byte
	for len(ts) > 0 {
		n := min(len(ts), 7*tsPacket)
		dgrams = append(dgrams, ts[:n])
		ts = ts[n:]
	}
	from := netip.MustParseAddrPort("192.0.2.1:4000")
	gap := time.Duration(seconds) * time.Second / time.Duration(len(dgrams))
	const tickEvery = 80 * time.Millisecond
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ln, err := newListener(net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:9000")), DefaultLatency)
		if err != nil {
			b.Fatal(err)
		}
		ln.write = func([]byte, netip.AddrPort) {}
		start := time.Now()
		ln.mu.Lock()
		ln.handle(conclusion(ln, from, 1), from, start)
		ln.mu.Unlock()
		c, err := (<-ln.backlog).Accept()
		if err != nil {
			b.Fatal(err)
		}
		sink := &discardSink{}
		var d *Demuxer
		pump := func() error {
			if d == nil {
				// The program map and the first frames are there by
				// now; the server's goroutine would have read them.
				if d, err = NewDemuxer(readerFunc(c.readNow), sink.Write, nil); err != nil {
					return err
				}
			}
			for {
				if err := d.Read(); err != nil {
					if err == errDrained {
						return nil
					}
					return err
				}
			}
		}
		data := make([][]byte, len(dgrams))
		for i, g := range dgrams {
			data[i] = dataPacket(c.id, 5+uint32(i), g)
			// The caller's clock: microseconds since its start.
			t := uint32((time.Duration(i) * gap).Microseconds())
			data[i][8], data[i][9], data[i][10], data[i][11] = byte(t>>24), byte(t>>16), byte(t>>8), byte(t)
		}
		b.StartTimer()
		ln.mu.Lock()
		nextTick := start.Add(tickEvery)
		for i, p := range data {
			now := start.Add(time.Duration(i) * gap)
			for !now.Before(nextTick) {
				ln.tick(nextTick)
				if c.pump == nil && len(c.queue) > 0 {
					ln.mu.Unlock()
					c.handOver(pump)
					ln.mu.Lock()
				}
				nextTick = nextTick.Add(tickEvery)
			}
			ln.handle(p, from, now)
		}
		ln.tick(start.Add(time.Duration(seconds)*time.Second + time.Second))
		ln.mu.Unlock()
		b.StopTimer()
		if ln.conns[c.id] != c {
			b.Fatalf("connection ended: %v", *c.err.Load())
		}
		if sink.units < seconds*30 {
			b.Fatalf("%d units of %d seconds", sink.units, seconds)
		}
		b.ReportMetric(float64(len(data)), "datagrams/op")
		ln.close()
		b.StartTimer()
	}
}
