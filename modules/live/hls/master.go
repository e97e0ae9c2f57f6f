package hls

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/onair/onair/modules/live/flv"
)

// Master playlists (RFC 8216 4.3.4.2) list a stream's renditions with
// what a player needs to choose among them: CODECS, BANDWIDTH (the peak
// segment bit rate), AVERAGE-BANDWIDTH, RESOLUTION and FRAME-RATE.
const (
	// MasterAV lists the A/V rendition and, as an alternative, the
	// audio-only one; written once the stream has video.
	MasterAV = "master.m3u8"
	// MasterAudio lists the audio-only rendition alone.
	MasterAudio = "master_audio.m3u8"
	// ArchiveMasterAV and ArchiveMasterAudio are their VOD counterparts
	// over ArchiveAV and ArchiveAudio, written by Finalize.
	ArchiveMasterAV    = "archive_master.m3u8"
	ArchiveMasterAudio = "archive_master_audio.m3u8"
)

// variant is one EXT-X-STREAM-INF entry.
type variant struct {
	uri        string
	peak, avg  int64 // bits per second
	codecs     string
	resolution string
	frameRate  float64
}

func (v variant) render(b *strings.Builder) {
	fmt.Fprintf(b, "#EXT-X-STREAM-INF:BANDWIDTH=%d", v.peak)
	if v.avg > 0 {
		fmt.Fprintf(b, ",AVERAGE-BANDWIDTH=%d", v.avg)
	}
	if v.codecs != "" {
		fmt.Fprintf(b, ",CODECS=%q", v.codecs)
	}
	if v.resolution != "" {
		fmt.Fprintf(b, ",RESOLUTION=%s", v.resolution)
	}
	if v.frameRate > 0 {
		fmt.Fprintf(b, ",FRAME-RATE=%.3f", v.frameRate)
	}
	fmt.Fprintf(b, "\n%s\n", v.uri)
}

func renderMaster(variants ...variant) []byte {
	var b strings.Builder
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n")
	for _, v := range variants {
		v.render(&b)
	}
	return []byte(b.String())
}

// variantStats measures a rendition from its segments: the peak bit rate
// of its full-length segments (of any when none is full-length yet), the
// average over all, and the codecs, resolution and frame rate of the
// newest segment.
type variantStats struct {
	full           float64 // seconds: shorter segments are not full-length
	peakFull, peak int64
	bytes          int64
	secs           float64
	last           Segment
	n              int
}

func (s *variantStats) add(seg Segment) {
	s.n++
	s.last = seg
	if seg.Duration <= 0 || seg.Size <= 0 {
		return
	}
	rate := int64(math.Ceil(float64(seg.Size) * 8 / seg.Duration))
	s.peak = max(s.peak, rate)
	if seg.Duration >= s.full {
		s.peakFull = max(s.peakFull, rate)
	}
	s.bytes += seg.Size
	s.secs += seg.Duration
}

func (s *variantStats) variant(uri string) variant {
	v := variant{uri: uri, peak: s.peakFull, codecs: s.last.Codecs, resolution: s.last.Resolution, frameRate: s.last.FrameRate}
	if v.peak == 0 {
		v.peak = s.peak
	}
	if s.secs > 0 {
		v.avg = int64(math.Ceil(float64(s.bytes) * 8 / s.secs))
	}
	v.peak = max(v.peak, v.avg, 1)
	return v
}

// hasVideo reports whether a rendition's segments carry video. Segments
// recorded before codecs were, are taken to (as the A/V rendition was
// always published).
func hasVideo(segs []Segment) bool {
	for _, s := range segs {
		if s.Codecs == "" || strings.Contains(s.Codecs, "avc1") {
			return true
		}
	}
	return false
}

// avcCodec is the RFC 6381 codec string of an H.264 stream: avc1 and its
// profile, constraint flags and level in hex.
func avcCodec(c *flv.AVCConfig) string {
	return fmt.Sprintf("avc1.%02x%02x%02x", c.Profile, c.Compatibility, c.Level)
}

// aacCodec is the RFC 6381 codec string of an AAC stream: mp4a.40 and
// its audio object type (5 for HE-AAC, 29 for HE-AAC v2).
func aacCodec(c *flv.AudioSpecificConfig) string {
	ot := c.ObjectType
	if c.ExtensionType == flv.AOTSBR || c.ExtensionType == flv.AOTPS {
		ot = c.ExtensionType
	}
	return fmt.Sprintf("mp4a.40.%d", ot)
}

// errSPS is returned for a sequence parameter set that cannot be read.
var errSPS = errors.New("hls: malformed sequence parameter set")

// SPSResolution reads the picture size, cropping applied, from an H.264
// sequence parameter set NAL unit.
func SPSResolution(nal []byte) (width, height int, err error) { return spsResolution(nal) }

// spsResolution reads the picture size, cropping applied, from an H.264
// sequence parameter set NAL unit (ITU-T H.264 7.3.2.1.1).
func spsResolution(nal []byte) (width, height int, err error) {
	if len(nal) < 4 {
		return 0, 0, errSPS
	}
	r := bitReader{b: unescapeRBSP(nal[1:])}
	profile := r.bits(8)
	r.bits(16) // constraint flags, level
	r.ue()     // seq_parameter_set_id
	chroma := uint32(1)
	separate := false
	switch profile {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		chroma = r.ue()
		if chroma == 3 {
			separate = r.bits(1) == 1
		}
		r.ue()              // bit_depth_luma_minus8
		r.ue()              // bit_depth_chroma_minus8
		r.bits(1)           // qpprime_y_zero_transform_bypass_flag
		if r.bits(1) == 1 { // seq_scaling_matrix_present_flag
			lists := 8
			if chroma == 3 {
				lists = 12
			}
			for i := 0; i < lists && r.err == nil; i++ {
				if r.bits(1) == 0 {
					continue
				}
				size := 16
				if i >= 6 {
					size = 64
				}
				last, next := int32(8), int32(8)
				for j := 0; j < size && r.err == nil; j++ {
					if next != 0 {
						next = (last + r.se() + 256) % 256
					}
					if next != 0 {
						last = next
					}
				}
			}
		}
	}
	r.ue()          // log2_max_frame_num_minus4
	switch r.ue() { // pic_order_cnt_type
	case 0:
		r.ue()
	case 1:
		r.bits(1)
		r.se()
		r.se()
		n := r.ue()
		if n > 255 {
			return 0, 0, errSPS
		}
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.se()
		}
	}
	r.ue()    // max_num_ref_frames
	r.bits(1) // gaps_in_frame_num_value_allowed_flag
	wMbs := r.ue() + 1
	hMaps := r.ue() + 1
	frameMbsOnly := r.bits(1)
	if frameMbsOnly == 0 {
		r.bits(1) // mb_adaptive_frame_field_flag
	}
	r.bits(1) // direct_8x8_inference_flag
	var cl, cr, ct, cb uint32
	if r.bits(1) == 1 {
		cl, cr, ct, cb = r.ue(), r.ue(), r.ue(), r.ue()
	}
	if r.err != nil || wMbs > 1024 || hMaps > 1024 || chroma > 3 {
		return 0, 0, errSPS
	}
	unitX, unitY := uint32(1), 2-frameMbsOnly
	if chroma != 0 && !separate {
		if chroma == 1 || chroma == 2 {
			unitX = 2
		}
		if chroma == 1 {
			unitY *= 2
		}
	}
	w := int64(wMbs)*16 - int64(cl+cr)*int64(unitX)
	h := int64(2-frameMbsOnly)*int64(hMaps)*16 - int64(ct+cb)*int64(unitY)
	if w <= 0 || h <= 0 {
		return 0, 0, errSPS
	}
	return int(w), int(h), nil
}

// unescapeRBSP removes emulation prevention bytes (00 00 03).
func unescapeRBSP(b []byte) []byte {
	out := make([]byte, 0, len(b))
	zeros := 0
	for _, c := range b {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		out = append(out, c)
	}
	return out
}

// bitReader reads big-endian bits and Exp-Golomb codes; reading past the
// end sets err and yields zeros.
type bitReader struct {
	b   []byte
	pos int
	err error
}

func (r *bitReader) bits(n int) uint32 {
	var v uint32
	for range n {
		if r.pos >= len(r.b)*8 {
			r.err = errSPS
			return 0
		}
		v = v<<1 | uint32(r.b[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return v
}

func (r *bitReader) ue() uint32 {
	zeros := 0
	for r.bits(1) == 0 {
		if r.err != nil || zeros >= 31 {
			r.err = errSPS
			return 0
		}
		zeros++
	}
	return 1<<zeros - 1 + r.bits(zeros)
}

func (r *bitReader) se() int32 {
	k := r.ue()
	if k%2 == 1 {
		return int32(k/2 + 1)
	}
	return -int32(k / 2)
}
