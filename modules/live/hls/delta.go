package hls

import (
	"bytes"
	"strconv"
)

// Playlist delta updates (RFC 8216bis 4.4.3.8, 4.4.5.2, 6.2.5.1): a live
// playlist that reaches back hours (Options.DVR) announces a Skip
// Boundary in EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL, and a client that asks
// with _HLS_skip=YES gets the playlist with its oldest segments, those
// wholly before the boundary (counted back from the end of the last
// segment), replaced by EXT-X-SKIP:SKIPPED-SEGMENTS=N. The rest is the
// full playlist's text as it is: the same EXT-X-MEDIA-SEQUENCE and
// EXT-X-DISCONTINUITY-SEQUENCE (they number the skipped segments too),
// and every kept segment with its program date time, discontinuity and
// parts. The client merges it with the playlist it has.

// headerTags are the playlist tags that come before the first media
// segment in a playlist this package writes; every other line belongs to
// a segment, the parts being written or the tags after them.
var headerTags = [][]byte{
	[]byte("#EXTM3U"), []byte("#EXT-X-VERSION:"), []byte("#EXT-X-TARGETDURATION:"),
	[]byte("#EXT-X-SERVER-CONTROL:"), []byte("#EXT-X-PART-INF:"), []byte("#EXT-X-MEDIA-SEQUENCE:"),
	[]byte("#EXT-X-DISCONTINUITY-SEQUENCE:"), []byte("#EXT-X-INDEPENDENT-SEGMENTS"),
	[]byte("#EXT-X-PLAYLIST-TYPE:"), []byte("#EXT-X-START:"),
}

func isHeaderTag(line []byte) bool {
	for _, t := range headerTags {
		if bytes.HasPrefix(line, t) {
			return true
		}
	}
	return false
}

// deltaVersion is the EXT-X-VERSION a playlist with EXT-X-SKIP needs
// (RFC 8216bis 8).
const deltaVersion = 9

// Delta returns the delta update of a live media playlist (full, as this
// package writes it) for a request with _HLS_skip=YES: ok is false, and
// the full playlist is the answer, when it offers no CAN-SKIP-UNTIL or no
// segment lies wholly before the Skip Boundary. It only reads full, which
// may come from the disk or the media store, so any input is safe.
func Delta(full []byte) (delta []byte, ok bool) {
	boundary, version, header, ok := deltaHeader(full)
	if !ok {
		return nil, false
	}
	from, skipped := skipCut(full[header:], boundary)
	if skipped == 0 {
		return nil, false
	}
	tail := full[header+from:]
	out := make([]byte, 0, header+48+len(tail))
	for line := range bytes.Lines(full[:header]) {
		if bytes.HasPrefix(line, []byte("#EXT-X-VERSION:")) && version < deltaVersion {
			line = []byte("#EXT-X-VERSION:" + strconv.Itoa(deltaVersion) + "\n")
		}
		out = append(out, line...)
		if version == 0 && bytes.HasPrefix(line, []byte("#EXTM3U")) {
			out = append(out, "#EXT-X-VERSION:"+strconv.Itoa(deltaVersion)+"\n"...)
		}
	}
	out = append(out, "#EXT-X-SKIP:SKIPPED-SEGMENTS="...)
	out = strconv.AppendInt(out, int64(skipped), 10)
	out = append(out, '\n')
	return append(out, tail...), true
}

// deltaHeader reads the playlist tags of a media playlist: the Skip
// Boundary of its CAN-SKIP-UNTIL, its EXT-X-VERSION (0 when absent) and
// where its segments begin. ok is false for a playlist without a Skip
// Boundary, one that is already a delta update, a master playlist, or no
// playlist at all.
func deltaHeader(full []byte) (boundary float64, version, header int, ok bool) {
	if !bytes.HasPrefix(full, []byte("#EXTM3U")) {
		return 0, 0, 0, false
	}
	for line := range bytes.Lines(full) {
		text := bytes.TrimRight(line, "\r\n")
		if !isHeaderTag(text) {
			break
		}
		header += len(line)
		if len(text) == len(line) {
			return 0, 0, 0, false // a playlist without its last newline is not ours
		}
		switch {
		case bytes.HasPrefix(text, []byte("#EXT-X-VERSION:")):
			v, err := strconv.Atoi(string(text[len("#EXT-X-VERSION:"):]))
			if err != nil || v < 1 {
				return 0, 0, 0, false
			}
			version = v
		case bytes.HasPrefix(text, []byte("#EXT-X-SERVER-CONTROL:")):
			boundary = skipAttribute(text[len("#EXT-X-SERVER-CONTROL:"):])
		}
	}
	if boundary <= 0 || bytes.Contains(full, []byte("\n#EXT-X-SKIP:")) || bytes.Contains(full, []byte("\n#EXT-X-STREAM-INF:")) {
		return 0, 0, 0, false
	}
	return boundary, version, header, true
}

// skipAttribute is the CAN-SKIP-UNTIL of an attribute list, 0 if none.
func skipAttribute(attrs []byte) float64 {
	for a := range bytes.SplitSeq(attrs, []byte(",")) {
		v, found := bytes.CutPrefix(a, []byte("CAN-SKIP-UNTIL="))
		if !found {
			continue
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || !(f > 0 && f <= 1e9) {
			return 0
		}
		return f
	}
	return 0
}

// skipCut finds, walking back from the end of body (a playlist after its
// header), the segments wholly before the Skip Boundary: those followed by
// boundary seconds of segments or more. It returns the offset just past
// the last of them and how many there are (by their EXTINF tags, one per
// segment as RFC 8216 4.3.2.1 requires); 0 when there are none. Only the
// kept tail is parsed: a playlist of hours has thousands of segments.
func skipCut(body []byte, boundary float64) (cut, skipped int) {
	var after, d float64 // seconds after the segment being read; its duration
	segEnd := -1         // offset past the URI of the segment being read; -1 before the last URI
	end := len(body)
	for end > 0 {
		stop := end
		if body[stop-1] == '\n' {
			stop--
		}
		start := bytes.LastIndexByte(body[:stop], '\n') + 1
		text := bytes.TrimRight(body[start:stop], "\r")
		switch {
		case len(text) == 0:
		case text[0] != '#':
			// A URI: the segment read so far, the one below, is complete.
			if segEnd >= 0 {
				if after >= boundary-1e-6 {
					return counted(body, segEnd)
				}
				after += d
			}
			segEnd, d = end, 0
		case segEnd >= 0:
			if v, found := bytes.CutPrefix(text, []byte("#EXTINF:")); found {
				v, _, _ = bytes.Cut(v, []byte(","))
				if x, err := strconv.ParseFloat(string(v), 64); err == nil && x >= 0 && x < 1e6 {
					d = x
				}
			}
		}
		end = start
	}
	if segEnd >= 0 && after >= boundary-1e-6 {
		return counted(body, segEnd)
	}
	return 0, 0
}

// counted is the cut at offset with the segments before it.
func counted(body []byte, cut int) (int, int) {
	n := 0
	for b := body[:cut]; len(b) > 0; {
		if bytes.HasPrefix(b, []byte("#EXTINF:")) {
			n++
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		b = b[i+1:]
	}
	if n == 0 {
		return 0, 0
	}
	return cut, n
}
