package streamcore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// tracksAV are an H.264 and an AAC track.
var tracksAV = func() (u []Unit) {
	var d FLV
	v, _, _ := d.Video(0, avcHeader, time.Now())
	a, _, _ := d.Audio(0, aacHeader, time.Now())
	return []Unit{v, a}
}()

// publish writes the configurations, then n pictures at 25 fps (a
// keyframe every 25) with an AAC frame after each.
func publish(t *testing.T, s *Stream, from, n int) {
	t.Helper()
	if from == 0 {
		for _, u := range tracksAV {
			if err := s.Write(u); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := from; i < from+n; i++ {
		ts := int64(i * 40)
		v := Unit{Video: true, DTS: ts, Key: i%25 == 0, NALUs: [][]byte{{0x41, byte(i)}}, At: time.Now(), Size: 8}
		if v.Key {
			v.NALUs = [][]byte{{0x65, byte(i)}}
		}
		if err := s.Write(v); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(Unit{DTS: ts, AAC: []byte{byte(i)}, At: time.Now(), Size: 4}); err != nil {
			t.Fatal(err)
		}
	}
}

// blocked is a reader that waits for release before its first unit.
type blocked struct {
	recorder
	release chan struct{}
	waited  bool
}

func (b *blocked) Unit(u *Unit) error {
	if !b.waited {
		<-b.release
		b.waited = true
	}
	return b.recorder.Unit(u)
}

// A reader that stops reading never holds up the source nor the other
// readers: past its queue it skips, and it starts again at a keyframe.
func TestSlowReaderSkipsToKeyframe(t *testing.T) {
	s := New(time.Now(), Options{TrackWait: time.Second})
	fast := &recorder{}
	slow := &blocked{release: make(chan struct{})}
	s.AddReader(fast, ReaderOptions{Name: "fast"})
	s.AddReader(slow, ReaderOptions{Name: "slow", Queue: 20})
	done := make(chan struct{})
	go func() { publish(t, s, 0, 200); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a stuck reader blocked the source")
	}
	close(slow.release)
	s.Close()
	if fast.err != nil || slow.err != nil {
		t.Fatal(fast.err, slow.err)
	}
	if len(fast.units) != 400 {
		t.Fatalf("the fast reader got %d units of 400", len(fast.units))
	}
	if n := len(slow.units); n >= 400 || n < 15 {
		t.Fatalf("the slow reader got %d units", n)
	}
	// After the units that fitted its queue, it resumed at a keyframe.
	var last int64 = -1
	for _, u := range slow.units {
		if u.Video && u.DTS > last+40 && last >= 0 && !u.Key {
			t.Fatalf("resumed at %d ms on a picture that is not a keyframe", u.DTS)
		}
		if u.Video {
			last = u.DTS
		}
	}
	if !slow.closed || !fast.closed {
		t.Fatal("readers not closed")
	}
}

// failing is a reader whose units fail.
type failing struct{ recorder }

var errDiskFull = errors.New("disk full")

func (failing) Unit(*Unit) error { return errDiskFull }

// An essential reader's failure ends the stream at the source's next
// write; another reader's is its own.
func TestEssentialReaderFailureEndsStream(t *testing.T) {
	for _, essential := range []bool{true, false} {
		s := New(time.Now(), Options{TrackWait: time.Second})
		s.AddReader(&failing{}, ReaderOptions{Name: "disk", Essential: essential})
		publish(t, s, 0, 1)
		s.Flush()
		err := s.Write(Unit{DTS: 80, AAC: []byte{1}, At: time.Now(), Size: 1})
		var re *ReaderError
		if essential != errors.As(err, &re) || essential && !errors.Is(err, errDiskFull) {
			t.Fatalf("essential %v: write after failure: %v", essential, err)
		}
		s.Close()
	}
}

// A reader that joins a running stream gets the tracks, then units from
// the next keyframe; Decided sees the tracks before any reader.
func TestReaderJoinsAtKeyframe(t *testing.T) {
	var decided Tracks
	s := New(time.Now(), Options{TrackWait: time.Second, Decided: func(t Tracks) error { decided = t; return nil }})
	publish(t, s, 0, 10)
	if decided.Video == nil || decided.Audio == nil {
		t.Fatalf("decided %+v", decided)
	}
	late := &recorder{}
	s.AddReader(late, ReaderOptions{Name: "late"})
	publish(t, s, 10, 30)
	s.Close()
	if late.err != nil {
		t.Fatal(late.err)
	}
	if len(late.units) == 0 || !late.units[0].Video || !late.units[0].Key || late.units[0].DTS != 25*40 {
		t.Fatalf("the late reader started at %+v", late.units[0])
	}
}

// The late-header rule: a track onMetaData announced that has not come
// after the track wait is started without, and joins as new tracks.
func TestLateTrackJoins(t *testing.T) {
	s := New(time.Now(), Options{TrackWait: time.Second})
	r := &recorder{}
	s.AddReader(r, ReaderOptions{Name: "r"})
	if err := s.Metadata(map[string]any{"videocodecid": 7.0, "audiocodecid": 10.0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(tracksAV[1]); err != nil {
		t.Fatal(err)
	}
	for ts := int64(0); ts <= 1200; ts += 23 {
		if err := s.Write(Unit{DTS: ts, AAC: []byte{1}, At: time.Now(), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	if !s.Decided() || r.tracks.Video != nil || r.tracks.Audio == nil {
		t.Fatalf("after the wait: decided %v, tracks %+v", s.Decided(), r.tracks)
	}
	if err := s.Write(tracksAV[0]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if r.tracks.Video == nil {
		t.Fatal("the late video track did not join")
	}
	if st := s.Stats(time.Now()); st.VideoCodec != "H.264" || st.AudioCodec != "AAC" {
		t.Fatalf("stats %+v", st)
	}
}

// A codec onMetaData announces and OnAir cannot package refuses the
// stream; an audio-only stream ignores the video's.
func TestMetadataCodecRefused(t *testing.T) {
	hevc := map[string]any{"videocodecid": 12.0, "audiocodecid": 10.0}
	err := New(time.Now(), Options{}).Metadata(hevc)
	var ce CodecError
	if !errors.As(err, &ce) || ce.Codec.ID != 12 {
		t.Fatalf("hevc: %v", err)
	}
	if err := New(time.Now(), Options{AudioOnly: true}).Metadata(hevc); err != nil {
		t.Fatalf("audio only: %v", err)
	}
}

// lazyReader is due only at keyframes; it hands each unit to the test
// with whether the test had already written the due unit.
type lazyReader struct {
	recorder
	dueWritten *atomic.Bool
	got        chan lazyGot
}

type lazyGot struct {
	u     Unit
	early bool // the unit came before the due one was written
}

func (l *lazyReader) Due(u *Unit) bool { return u.Video && u.Key }

func (l *lazyReader) Unit(u *Unit) error {
	l.got <- lazyGot{u: *u, early: !l.dueWritten.Load()}
	return l.recorder.Unit(u)
}

// A Lazy reader is woken by a due unit and gets the units queued before
// it then, in order; without one, by LazyBatch units waiting.
func TestLazyReaderWokenWhenDue(t *testing.T) {
	var written atomic.Bool
	lazy := &lazyReader{dueWritten: &written, got: make(chan lazyGot, 4*LazyBatch)}
	s := New(time.Now(), Options{})
	s.AddReader(lazy, ReaderOptions{Name: "lazy"})
	written.Store(true)
	publish(t, s, 0, 1) // the tracks and a keyframe: due
	for range 2 {
		<-lazy.got
	}
	// Inter pictures and audio are not due: they wait for the keyframe.
	written.Store(false)
	publish(t, s, 1, 10)
	written.Store(true)
	publish(t, s, 25, 1) // a keyframe, then audio that may come after the wake
	for i := range 21 {
		g := <-lazy.got
		if g.early {
			t.Fatalf("unit %d: the lazy reader was woken before a due unit", i)
		}
		if want := int64(40 + i/2*40); i < 20 && (g.u.DTS != want || g.u.Video != (i%2 == 0)) {
			t.Fatalf("unit %d: video=%v dts %d, want %d", i, g.u.Video, g.u.DTS, want)
		}
	}
	// Without a due unit, LazyBatch units waiting wake it (with the
	// keyframe's audio, if it waits too).
	publish(t, s, 26, LazyBatch/2)
	for range LazyBatch {
		<-lazy.got
	}
	s.Close()
	if lazy.err != nil || !lazy.closed {
		t.Fatal(lazy.err, lazy.closed)
	}
}
