package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Where glass-to-glass time goes, on the same clock as the samples: every
// lag below is a moment less the nominal generation of the media it
// concerns (ffmpeg's start + its timestamp), so that they subtract.
//
//   - encoder: an FLV copy of the published stream (a third output of the
//     tee) arrives at a local sink; the lag of each video frame's arrival
//     is x264 and ffmpeg's own pipeline, and ffmpeg's start-up before its
//     first frame (which every lag below carries too).
//   - part published: a follower makes OnAir's blocking reloads, as hls.js
//     does, for each hinted part; the answer's X-Onair-Published is when
//     the part appeared in the playlist, its media end the part's end.
//   - the rest, to glass: the player's fetch, its hold-back behind the
//     edge and the browser's presentation.

// breakdownSkip is how much media at the start is left out: the
// publication's start-up (connections, the first segment) is not the
// steady state the samples measure.
const breakdownSkip = 8 * time.Second

// flvSink accepts one FLV stream and records each video tag's arrival lag
// from t0, set before the stream starts.
type flvSink struct {
	ln   net.Listener
	t0   time.Time
	mu   sync.Mutex
	lags []float64 // seconds
	// header is when the stream's FLV header arrived, from t0: ffmpeg's
	// start-up to its first frame encoded, plus x264's set-up (the sink
	// is the tee's first output).
	header time.Duration
}

func newFLVSink() (*flvSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &flvSink{ln: ln}
	go s.serve()
	return s, nil
}

func (s *flvSink) url() string { return "tcp://" + s.ln.Addr().String() }

func (s *flvSink) close() { s.ln.Close() }

func (s *flvSink) serve() {
	c, err := s.ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	if _, err := r.Peek(1); err != nil {
		return
	}
	s.mu.Lock()
	s.header = time.Since(s.t0)
	s.mu.Unlock()
	if _, err := io.CopyN(io.Discard, r, 9+4); err != nil { // header, first PreviousTagSize
		return
	}
	var h [11]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		at := time.Now()
		size := int64(h[1])<<16 | int64(h[2])<<8 | int64(h[3])
		ms := int64(h[4])<<16 | int64(h[5])<<8 | int64(h[6]) | int64(h[7])<<24
		if h[0] == 9 && time.Duration(ms)*time.Millisecond >= breakdownSkip {
			s.mu.Lock()
			s.lags = append(s.lags, at.Sub(s.t0).Seconds()-float64(ms)/1000)
			s.mu.Unlock()
		}
		if _, err := io.CopyN(io.Discard, r, size+4); err != nil {
			return
		}
	}
}

func (s *flvSink) median() (lag float64, frames int, header time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return mid(s.lags), len(s.lags), s.header
}

// mid is the median of v, 0 for none.
func mid(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return median(v)
}

// partFollower follows a live LL-HLS media playlist part by part.
type partFollower struct {
	lags []float64 // seconds: part published − nominal generation of its end
	// start is each segment's media start (seconds from the first
	// segment's, which begins at the publication's first keyframe:
	// ffmpeg's first frame).
	start map[uint64]float64
}

var hintRE = regexp.MustCompile(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="[^"]*-(\d+)-p(\d+)\.ts"`)

// follow resolves the master's first variant and follows it until ctx ends.
func followParts(ctx context.Context, master string, t0 time.Time) *partFollower {
	f := &partFollower{start: map[uint64]float64{}}
	text, err := getText(master)
	if err != nil {
		return f
	}
	var variant string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			variant = l
			break
		}
	}
	base, err := url.Parse(master)
	if err != nil || variant == "" {
		return f
	}
	ref, err := base.Parse(variant)
	if err != nil {
		return f
	}
	media := ref.String()
	sep := "?"
	if strings.Contains(media, "?") {
		sep = "&"
	}
	text, err = getText(media)
	for err == nil && ctx.Err() == nil {
		f.parse(text)
		m := hintRE.FindStringSubmatch(text)
		if m == nil {
			return f
		}
		msn, _ := strconv.ParseUint(m[1], 10, 64)
		idx, _ := strconv.Atoi(m[2])
		var published time.Time
		text, published, err = getBlocking(ctx, fmt.Sprintf("%s%s_HLS_msn=%d&_HLS_part=%d", media, sep, msn, idx))
		if err != nil || published.IsZero() {
			continue
		}
		if end, ok := f.parse(text)[[2]uint64{msn, uint64(idx)}]; ok && end >= breakdownSkip.Seconds() {
			f.lags = append(f.lags, published.Sub(t0).Seconds()-end)
		}
	}
	return f
}

// parse records the segments' media starts and returns each listed part's
// media end by (msn, index).
func (f *partFollower) parse(text string) map[[2]uint64]float64 {
	ends := map[[2]uint64]float64{}
	var msn uint64
	var sum float64
	idx := uint64(0)
	first := len(f.start) == 0
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "#EXT-X-MEDIA-SEQUENCE:"):
			msn, _ = strconv.ParseUint(l[len("#EXT-X-MEDIA-SEQUENCE:"):], 10, 64)
			if first {
				f.start[msn] = 0
			}
		case strings.HasPrefix(l, "#EXT-X-PART:DURATION="):
			d, _, _ := strings.Cut(l[len("#EXT-X-PART:DURATION="):], ",")
			v, _ := strconv.ParseFloat(d, 64)
			sum += v
			if s, ok := f.start[msn]; ok {
				ends[[2]uint64{msn, idx}] = s + sum
			}
			idx++
		case strings.HasPrefix(l, "#EXTINF:"):
			d, _, _ := strings.Cut(l[len("#EXTINF:"):], ",")
			v, _ := strconv.ParseFloat(d, 64)
			if s, ok := f.start[msn]; ok {
				f.start[msn+1] = s + v
			}
		case l != "" && !strings.HasPrefix(l, "#"):
			msn, sum, idx = msn+1, 0, 0
		}
	}
	return ends
}

// getBlocking is a blocking reload: the playlist and, when the server
// held it, the moment what it waited for was published.
func getBlocking(ctx context.Context, u string) (string, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", time.Time{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", time.Time{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("%s: %s", u, resp.Status)
	}
	var at time.Time
	if us, err := strconv.ParseInt(resp.Header.Get("X-Onair-Published"), 10, 64); err == nil {
		at = time.UnixMicro(us)
	}
	return string(b), at, nil
}
