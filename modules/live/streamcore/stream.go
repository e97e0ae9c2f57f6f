package streamcore

import (
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Stream.
type Options struct {
	// TrackWait bounds, in media time, how long the stream waits for a
	// track onMetaData announced, or for the second track.
	TrackWait time.Duration
	// AudioOnly makes an audio-only stream: its source drops video
	// unread (IgnoreVideo) and no video track is ever decided.
	AudioOnly bool
	// Decided, if set, runs on the source's goroutine once the tracks are
	// decided, before any unit reaches a reader: the place to claim what
	// the stream feeds and to add its readers. An error ends the stream
	// (the source gets it back from the Write that decided).
	Decided func(Tracks) error
}

// Stream is one publication in the core. The source's methods (Metadata,
// Write, IgnoreVideo, Close) are called from one goroutine, one at a time;
// AddReader, Stats and Flush from any.
type Stream struct {
	opts  Options
	stats *stats

	// The source's goroutine only.
	probe  *probe // until the tracks are decided, then nil
	tracks Tracks
	err    error // sticky: what ended the stream

	mu      sync.Mutex // readers joining, tracks changing, closing
	closed  bool
	live    bool                      // the tracks were decided and sent to the readers
	readers atomic.Pointer[[]*reader] // copied on change, read by the source per unit
	failed  atomic.Pointer[ReaderError]
}

// New starts a stream whose source connected at now.
func New(now time.Time, opts Options) *Stream {
	s := &Stream{opts: opts, stats: newStats(now),
		probe: &probe{wait: opts.TrackWait.Milliseconds(), audioOnly: opts.AudioOnly}}
	s.readers.Store(&[]*reader{})
	return s
}

// AudioOnly tells the source to drop video unread (IgnoreVideo).
func (s *Stream) AudioOnly() bool { return s.opts.AudioOnly }

// Decided reports whether the tracks are decided (source's goroutine).
func (s *Stream) Decided() bool { return s.probe == nil }

// Metadata takes the encoder's announcement (onMetaData): the picture size
// for the statistics and, while the tracks are being decided, the tracks.
// A codec that cannot be packaged is a CodecError, returned again by the
// next Write.
func (s *Stream) Metadata(meta map[string]any) error {
	s.stats.metadata(meta)
	if s.probe == nil || s.err != nil {
		return s.err
	}
	if err := s.probe.metadata(meta); err != nil {
		s.err = err
	}
	return s.err
}

// IgnoreVideo counts video an audio-only stream drops unread (size bytes
// at media time ts); a stream still without audio after the track wait
// ends with ErrNoAudio.
func (s *Stream) IgnoreVideo(ts int64, size int, at time.Time) error {
	if s.err != nil {
		return s.err
	}
	s.stats.ignoredVideo(size, at)
	if s.probe != nil && s.probe.silent(ts) {
		s.err = ErrNoAudio
	}
	return s.err
}

// Write takes a unit or a configuration from the source, which gives up
// its bytes. An error ends the stream: a refusal while deciding, what
// Decided returned, or an essential reader's failure (*ReaderError).
func (s *Stream) Write(u Unit) error {
	if s.err != nil {
		return s.err
	}
	if e := s.failed.Load(); e != nil {
		s.err = e
		return e
	}
	if u.Video && s.opts.AudioOnly {
		return nil
	}
	s.stats.unit(&u)
	if s.probe == nil {
		s.deliver(u)
		return nil
	}
	if !s.probe.add(u) {
		return nil
	}
	p := s.probe
	s.probe = nil
	s.tracks = p.tracks()
	if s.opts.Decided != nil {
		if err := s.opts.Decided(s.tracks); err != nil {
			s.err = err
			return err
		}
	}
	s.mu.Lock()
	s.live = true
	s.broadcastTracks()
	s.mu.Unlock()
	for _, u := range p.replay() {
		s.deliver(u)
	}
	p.pending = nil
	return nil
}

// deliver hands a unit to the readers, or a new configuration as Tracks.
func (s *Stream) deliver(u Unit) {
	switch {
	case u.AVC != nil:
		s.mu.Lock()
		s.tracks.Video = u.AVC
		s.broadcastTracks()
		s.mu.Unlock()
	case u.ASC != nil:
		s.mu.Lock()
		s.tracks.Audio = u.ASC
		s.broadcastTracks()
		s.mu.Unlock()
	case u.media():
		p := &u
		for _, r := range *s.readers.Load() {
			r.unit(p, s.tracks.Video != nil)
		}
	}
}

// broadcastTracks sends the tracks to every reader; s.mu is held.
func (s *Stream) broadcastTracks() {
	t := s.tracks
	for _, r := range *s.readers.Load() {
		r.send(item{tracks: &t})
	}
}

// Err is what ended the stream, if anything: a refusal, Decided's error,
// an essential reader's failure, or ErrClosed.
func (s *Stream) Err() error {
	if s.err == nil || s.err == ErrClosed {
		if e := s.failed.Load(); e != nil {
			return e
		}
	}
	return s.err
}

// Stats is the publication's health now.
func (s *Stream) Stats(now time.Time) Stats { return s.stats.snapshot(now) }

// AddReader subscribes r to the stream: from now on it gets the tracks
// once decided, then every media unit, on a goroutine of its own. A reader
// added after the decision gets the current tracks and starts at the next
// keyframe. After Close, r is closed at once.
//
// Safe from any goroutine; from Decided, the reader gets every unit.
func (s *Stream) AddReader(r Reader, o ReaderOptions) {
	rd := newReader(r, o, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		rd.stop()
		return
	}
	if s.live {
		// Joins a running stream: tracks first, then from a keyframe.
		t := s.tracks
		rd.send(item{tracks: &t})
		rd.skipping = true
	}
	list := append(append([]*reader(nil), *s.readers.Load()...), rd)
	s.readers.Store(&list)
}

// fail records an essential reader's failure for the source's next Write.
func (s *Stream) fail(name string, err error) {
	s.failed.CompareAndSwap(nil, &ReaderError{Reader: name, Err: err})
}

// Flush waits until every reader has handled what was written so far.
func (s *Stream) Flush() {
	for _, r := range *s.readers.Load() {
		r.flush()
	}
}

// Close ends the stream: each reader handles what it has queued, then is
// closed; Close returns when all are. Called once, by the source, after
// its last Write.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	list := *s.readers.Load()
	s.mu.Unlock()
	if s.err == nil {
		s.err = ErrClosed
	}
	for _, r := range list {
		r.stop()
	}
	for _, r := range list {
		<-r.done
	}
}
