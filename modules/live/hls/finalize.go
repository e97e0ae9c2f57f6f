package hls

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Finalize ends a stream whose publisher is gone for good: it rebuilds the
// VOD playlists (ArchiveAV, ArchiveAudio, and ArchiveOf each rung of a
// ladder) and their master playlists
// (ArchiveMasterAV when the recording has video, ArchiveMasterAudio) from
// the segment index, adds EXT-X-ENDLIST to the live playlists so players
// stop polling (without the LL-HLS tags, which only serve a live edge;
// reaching back Options.DVR, as while live, so a rewound player goes on) and
// removes the LL-HLS part files. It only
// reads the index and the directory, so it also recovers a stream after a
// crash: every segment recorded before the crash is kept, the one being
// written is dropped (and, after a power loss, those that did not reach
// the disk whole: see ReadIndex and Options.Placeholders). The archive
// is then synced to disk (syncArchive). It is idempotent. Do not call it
// while a Packager is open on dir.
func Finalize(dir string, opts Options) error {
	o := opts.withDefaults()
	segs, err := readIndex(dir, o.Placeholders)
	if err != nil {
		return err
	}
	byRendition := map[string][]Segment{}
	var rungs []string // highest first
	for _, s := range segs {
		if IsRung(s.Rendition) && byRendition[s.Rendition] == nil {
			rungs = append(rungs, s.Rendition)
		}
		byRendition[s.Rendition] = append(byRendition[s.Rendition], s)
	}
	slices.SortFunc(rungs, func(a, b string) int { return cmp.Compare(RungHeight(b), RungHeight(a)) })
	type output struct{ rendition, live, archive string }
	outputs := []output{{RenditionAV, PlaylistAV, ArchiveAV}}
	for _, r := range rungs {
		outputs = append(outputs, output{r, PlaylistOf(r), ArchiveOf(r)})
	}
	outputs = append(outputs, output{RenditionAudio, PlaylistAudio, ArchiveAudio})
	stats := map[string]*variantStats{}
	for _, out := range outputs {
		list := byRendition[out.rendition]
		if len(list) == 0 {
			continue
		}
		st := &variantStats{full: o.SegmentDuration.Seconds() / 2}
		for _, s := range list {
			st.add(s)
			removeParts(dir, s.Rendition, s.Sequence)
		}
		stats[out.rendition] = st
		vod := playlist{vod: true, mediaSequence: list[0].Sequence, segments: list, targetDuration: 1}
		for _, s := range list {
			vod.targetDuration = max(vod.targetDuration, targetFor(s.Duration))
		}
		if err := writeFileAtomic(dir, out.archive, vod.render()); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
		start := windowStart(list, max(o.Window, o.DVR).Seconds()) // as it was listed live
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
	var audio []variant
	if st := stats[RenditionAudio]; st != nil {
		audio = append(audio, st.variant(ArchiveAudio))
		if err := writeFileAtomic(dir, ArchiveMasterAudio, renderMaster(audio...)); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	if st := stats[RenditionAV]; st != nil && hasVideo(byRendition[RenditionAV]) {
		vs := []variant{st.variant(ArchiveAV)}
		for _, r := range rungs {
			vs = append(vs, stats[r].variant(ArchiveOf(r)))
		}
		if err := writeFileAtomic(dir, ArchiveMasterAV, renderMaster(append(vs, audio...)...)); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	if o.noSync {
		return nil
	}
	return syncArchive(dir, segs)
}

// syncArchive makes the archive of dir durable: its segments, index and
// playlists, then the directory that names them. The packager syncs
// nothing while live (nginx-rtmp neither): a process crash loses nothing
// that way, since the page cache outlives the process, and a live segment
// is on the disk within the kernel's writeback delay anyway; what a power
// loss mid-show may cost is the last half minute, which Finalize leaves
// out when it did not reach the disk whole (ReadRecorded). The archive,
// kept for good, is synced here once, each file's pages mostly written
// back already.
func syncArchive(dir string, segs []Segment) error {
	names := append(ArchiveFiles(segs), IndexFile)
	for _, s := range segs {
		names = append(names, s.File)
	}
	names = append(names, ".")
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = f.Sync()
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("finalize: sync %s: %w", name, err)
		}
	}
	return nil
}
