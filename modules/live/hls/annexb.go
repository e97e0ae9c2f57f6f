package hls

import "github.com/onair/onair/modules/live/flv"

var (
	startCode = []byte{0, 0, 0, 1}
	// audNALU is an access unit delimiter with primary_pic_type 7 (any
	// slice type), which some decoders need to find frame boundaries in a
	// transport stream.
	audNALU = []byte{0x09, 0xF0}
)

// appendAnnexB converts one access unit from length-prefixed NAL units to
// an Annex-B byte stream: an AUD first, then, when the unit holds an IDR
// slice, the SPS and PPS from cfg unless the unit carries its own, so every
// keyframe can be decoded on its own (segments are joined mid-stream). It
// reports whether the unit holds an IDR slice.
func appendAnnexB(dst []byte, nalus [][]byte, cfg *flv.AVCConfig) ([]byte, bool) {
	idr, sps, pps := flv.ScanAccessUnit(nalus)
	dst = append(dst, startCode...)
	dst = append(dst, audNALU...)
	if idr && !(sps && pps) && cfg != nil {
		for _, ps := range cfg.SPS {
			dst = append(append(dst, startCode...), ps...)
		}
		for _, ps := range cfg.PPS {
			dst = append(append(dst, startCode...), ps...)
		}
	}
	for _, n := range nalus {
		if flv.NALType(n) == flv.NALAUD {
			continue // replaced by ours
		}
		dst = append(append(dst, startCode...), n...)
	}
	return dst, idr
}
