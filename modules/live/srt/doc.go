// Package srt is the SRT ingest of the live module: a listener
// (github.com/datarhei/gosrt, pure Go) that takes MPEG-TS from SRT callers
// in publish mode, H.264 and AAC, and turns it into the stream core's
// access units (demux.go: github.com/bluenviron/mediacommon's MPEG-TS
// reader finds the program map and the tracks, then tsread.go reassembles
// the PES of the two tracks in reused buffers and splits H.264 at its
// start codes).
//
// The caller names its stream key in the SRT streamid, bare ("KEY") or in
// SRT's access control syntax ("#!::r=KEY,m=publish"); see ParseStreamID.
// Admission follows the RTMP server's rules (admission.go): a deadline to
// start sending media, caps per address and in all, and the stream key
// throttle.
package srt
