package hls

import "fmt"

// Finalize ends a stream whose publisher is gone for good: it rebuilds the
// VOD playlists (ArchiveAV, ArchiveAudio) from the segment index and adds
// EXT-X-ENDLIST to the live playlists so players stop polling. It only
// reads the index and the directory, so it also recovers a stream after a
// crash: every segment recorded before the crash is kept, the one being
// written is dropped. It is idempotent. Do not call it while a Packager is
// open on dir.
func Finalize(dir string, opts Options) error {
	o := opts.withDefaults()
	segs, err := ReadIndex(dir)
	if err != nil {
		return err
	}
	byRendition := map[string][]Segment{}
	for _, s := range segs {
		byRendition[s.Rendition] = append(byRendition[s.Rendition], s)
	}
	outputs := []struct{ rendition, live, archive string }{
		{RenditionAV, PlaylistAV, ArchiveAV},
		{RenditionAudio, PlaylistAudio, ArchiveAudio},
	}
	for _, out := range outputs {
		list := byRendition[out.rendition]
		if len(list) == 0 {
			continue
		}
		vod := playlist{vod: true, mediaSequence: list[0].Sequence, segments: list, targetDuration: 1}
		for _, s := range list {
			vod.targetDuration = max(vod.targetDuration, targetFor(s.Duration))
		}
		if err := writeFileAtomic(dir, out.archive, vod.render()); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
		start := windowStart(list, o.Window.Seconds())
		// The ended live playlist keeps the target it was published with.
		target := 1
		for _, s := range list[start:] {
			target = max(target, s.Target, targetFor(s.Duration))
		}
		live := playlist{
			targetDuration: target,
			mediaSequence:  list[start].Sequence,
			segments:       list[start:],
			ended:          true,
		}
		for _, s := range list[:start] {
			if s.Discontinuity {
				live.discontinuity++
			}
		}
		if err := writeFileAtomic(dir, out.live, live.render()); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	return nil
}
