package hls

import (
	"errors"
	"time"

	"github.com/onair/onair/modules/live/streamcore"
)

// FLVFeed is how the tests publish FLV tags to a Packager: through the
// stream core, as the live module does (one parse per tag, the core's
// track decision), but synchronously: each call returns once the packager
// has handled what it was given, with the packager's error if any.
type FLVFeed struct {
	*Packager
	demux  streamcore.FLV
	core   *streamcore.Stream
	closed bool
	err    error // sticky, as a source's
	// Async skips waiting for the packager after each tag (the benchmark:
	// the packager runs beside the parse, as in the live module); it waits
	// every asyncBatch units only, as the packager keeps up with a real
	// time publisher's and its queue never fills.
	Async   bool
	written int
}

// asyncBatch is how many units an Async feed writes between waits: well
// within the reader's queue.
const asyncBatch = streamcore.DefaultQueue / 4

// testTrackWait is the track wait of the tests' streams.
const testTrackWait = 2 * time.Second

// NewFLVFeed feeds p through a stream core waiting trackWait (0: 2 s) for
// a missing track.
func NewFLVFeed(p *Packager, trackWait time.Duration) *FLVFeed {
	if trackWait <= 0 {
		trackWait = testTrackWait
	}
	f := &FLVFeed{Packager: p}
	f.core = streamcore.New(p.opts.Now(), streamcore.Options{TrackWait: trackWait, AudioOnly: p.opts.AudioOnly})
	f.core.AddReader(feedReader{p}, streamcore.ReaderOptions{Name: "hls", Essential: true})
	return f
}

type feedReader struct{ p *Packager }

func (r feedReader) Tracks(t streamcore.Tracks) error { return r.p.Tracks(t) }
func (r feedReader) Unit(u *streamcore.Unit) error    { return r.p.Unit(u) }
func (r feedReader) Close()                           {}
func (r feedReader) Due(u *streamcore.Unit) bool      { return r.p.Due(u) } // as the live module's reader

// Metadata takes onMetaData.
func (f *FLVFeed) Metadata(meta map[string]any) error { return f.core.Metadata(meta) }

// Video publishes a video tag body.
func (f *FLVFeed) Video(ts int64, body []byte) error {
	if f.core.AudioOnly() {
		return nil
	}
	u, ok, err := f.demux.Video(ts, body, f.opts.Now())
	return f.write(u, ok, err)
}

// Audio publishes an audio tag body.
func (f *FLVFeed) Audio(ts int64, body []byte) error {
	u, ok, err := f.demux.Audio(ts, body, f.opts.Now())
	return f.write(u, ok, err)
}

func (f *FLVFeed) write(u streamcore.Unit, ok bool, err error) error {
	switch {
	case f.err != nil:
	case err != nil:
		f.err = err
	case !ok:
	default:
		f.err = f.core.Write(u)
		f.written++
		if f.err == nil && (!f.Async || f.written%asyncBatch == 0) {
			f.core.Flush()
			f.err = f.core.Err()
		}
	}
	return f.err
}

// Close ends the stream and closes the packager.
func (f *FLVFeed) Close() error {
	if !f.closed {
		f.closed = true
		f.core.Close()
	}
	if err := f.core.Err(); !errors.Is(err, streamcore.ErrClosed) {
		return err
	}
	return f.Packager.Close()
}
