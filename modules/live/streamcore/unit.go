// Package streamcore is the live module's stream core: the one place a
// publication's media passes through between the protocol that carried it
// and everything made of it.
//
// A source (the RTMP ingest today; SRT or RTMPS tomorrow) parses what it
// receives once, into access units (an H.264 picture as NAL units, one raw
// AAC frame) and decoder configurations, and writes them to a Stream. The
// Stream decides the tracks (onMetaData, sequence headers, the late-header
// rules of probe.go), measures the publication's health (stats.go) and
// hands every unit, once, to each of its readers (reader.go): the HLS
// packager, and whatever comes next (a recorder, a transcoder, a
// restreamer). A reader has its own goroutine and a bounded queue; one that
// falls behind skips to the next keyframe and never blocks the source.
//
// The package knows no protocol server, no show and no file: it imports the
// flv package for the codec records only. docs/modules.md says how a
// reader plugs in.
package streamcore

import (
	"errors"
	"fmt"
	"time"

	"github.com/onair/onair/modules/live/flv"
)

// Unit is one access unit, or (from a source, before the core) one
// decoder configuration. Its bytes belong to the core once written: a
// source never reuses them, and readers share them read-only.
type Unit struct {
	// Video: an H.264 access unit (or configuration); else AAC audio.
	Video bool
	// DTS is the decoding time in milliseconds on the source's timeline
	// (audio and video share it).
	DTS int64
	// CTS is the presentation time minus DTS, in milliseconds (video).
	CTS int32
	// Key marks a picture the source flags as a keyframe: a reader that
	// skipped units starts again here.
	Key bool
	// NALUs are the picture's H.264 NAL units, without start codes or
	// length prefixes.
	NALUs [][]byte
	// AAC is one raw AAC frame.
	AAC []byte
	// AVC and ASC, when set, make the unit a configuration (a sequence
	// header) instead of media. Sources write them; readers receive them
	// as Tracks, never as units.
	AVC *flv.AVCConfig
	ASC *flv.AudioSpecificConfig
	// At is when the source received the unit: the wall-clock anchor of
	// the stream's timeline (program date times).
	At time.Time
	// Size is the bytes the unit took on the wire, for the bitrates.
	Size int
}

// config reports whether the unit is a decoder configuration.
func (u *Unit) config() bool { return u.AVC != nil || u.ASC != nil }

// media reports whether the unit carries something a reader can decode.
// A frame that came before its track's configuration, or an empty one,
// counts in the statistics and goes no further.
func (u *Unit) media() bool { return len(u.NALUs) > 0 || len(u.AAC) > 0 }

// Tracks are the decided tracks of a stream with their decoder
// configurations; a nil one is absent. The configurations are never
// modified once handed out: a new sequence header makes new Tracks.
type Tracks struct {
	Video *flv.AVCConfig
	Audio *flv.AudioSpecificConfig
}

// CodecError refuses a publication whose codec OnAir cannot package.
// Sources turn it into their protocol's refusal (an RTMP onStatus error
// naming the codec).
type CodecError struct{ Codec flv.Codec }

func (e CodecError) Error() string { return "streamcore: unsupported codec " + e.Codec.String() }

// ErrNoAudio ends a publication to an audio-only stream that sends video
// and no audio within the track wait.
var ErrNoAudio = errors.New("streamcore: audio-only stream without audio")

// ErrClosed is returned by a Stream written after Close.
var ErrClosed = errors.New("streamcore: stream closed")

// ReaderError is what a stream returns to its source after an essential
// reader failed: the source ends the publication with it.
type ReaderError struct {
	Reader string
	Err    error
}

func (e *ReaderError) Error() string {
	return fmt.Sprintf("streamcore: reader %s: %v", e.Reader, e.Err)
}

func (e *ReaderError) Unwrap() error { return e.Err }
