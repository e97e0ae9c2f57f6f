package flv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Tag types of FLV files, equal to the RTMP message types.
const (
	TagAudio  = 8
	TagVideo  = 9
	TagScript = 18
)

// Header is an FLV file header.
type Header struct {
	Version  uint8
	HasAudio bool
	HasVideo bool
}

// Tag is one tag of an FLV file.
type Tag struct {
	Type      uint8
	Timestamp uint32 // milliseconds, with the extension byte applied
	Data      []byte
}

// Reader reads an FLV file tag by tag.
type Reader struct {
	Header Header
	// SlabSize, when positive, has the data of tags up to half its size
	// read into shared slabs of that size, one allocation for many tags
	// (a tag's data has its own otherwise). A slab is never written
	// again where it holds a tag's data, so Data stays the caller's as
	// with a buffer of its own, and keeps its slab alive.
	SlabSize int
	r        io.Reader
	slab     []byte
	head     [11]byte // the tag header and back pointer, read here to spare an allocation each
}

// NewReader reads the file header and the first back pointer.
func NewReader(r io.Reader) (*Reader, error) {
	var h [13]byte
	if _, err := io.ReadFull(r, h[:9]); err != nil {
		return nil, fmt.Errorf("flv header: %w", err)
	}
	if string(h[:3]) != "FLV" {
		return nil, fmt.Errorf("flv signature %q: %w", h[:3], ErrInvalid)
	}
	off := binary.BigEndian.Uint32(h[5:9])
	if off < 9 {
		return nil, fmt.Errorf("flv header size %d: %w", off, ErrInvalid)
	}
	// Skip any header extension, then PreviousTagSize0.
	if _, err := io.CopyN(io.Discard, r, int64(off-9)+4); err != nil {
		return nil, fmt.Errorf("flv header: %w", err)
	}
	return &Reader{
		Header: Header{Version: h[3], HasAudio: h[4]&0x04 != 0, HasVideo: h[4]&0x01 != 0},
		r:      r,
	}, nil
}

// ReadTag returns the next tag, or io.EOF at the end of the file. Tag data
// grows as it is read, so a lying size costs no more memory than the bytes
// actually present (or, for a size up to half of SlabSize, one slab). The
// data is the caller's: no later read writes over it.
func (fr *Reader) ReadTag() (Tag, error) {
	h := fr.head[:]
	if _, err := io.ReadFull(fr.r, h); err != nil {
		if err == io.ErrUnexpectedEOF {
			return Tag{}, fmt.Errorf("flv tag header: %w", err)
		}
		return Tag{}, err
	}
	size := int64(h[1])<<16 | int64(h[2])<<8 | int64(h[3])
	t := Tag{
		Type:      h[0] & 0x1F,
		Timestamp: uint32(h[7])<<24 | uint32(h[4])<<16 | uint32(h[5])<<8 | uint32(h[6]),
	}
	if fr.SlabSize > 0 && size <= int64(fr.SlabSize/2) {
		// At most one slab for a size that lies.
		if int64(cap(fr.slab)-len(fr.slab)) < size {
			fr.slab = make([]byte, 0, fr.SlabSize)
		}
		start := len(fr.slab)
		end := start + int(size)
		if n, err := io.ReadFull(fr.r, fr.slab[start:end]); err != nil {
			return Tag{}, fmt.Errorf("flv tag body (%d of %d bytes): %w", n, size, io.ErrUnexpectedEOF)
		}
		fr.slab = fr.slab[:end]
		t.Data = fr.slab[start:end:end]
	} else {
		var buf bytes.Buffer
		if n, err := io.Copy(&buf, io.LimitReader(fr.r, size)); err != nil || n < size {
			return Tag{}, fmt.Errorf("flv tag body (%d of %d bytes): %w", n, size, io.ErrUnexpectedEOF)
		}
		t.Data = buf.Bytes()
	}
	if _, err := io.ReadFull(fr.r, fr.head[:4]); err != nil && err != io.EOF {
		return Tag{}, fmt.Errorf("flv back pointer: %w", err)
	}
	return t, nil
}
