package rtmp

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	handshakeVersion = 3
	handshakeSize    = 1536
)

// ErrBadVersion is returned when C0 asks for anything but plain RTMP.
var ErrBadVersion = errors.New("rtmp: unsupported handshake version")

// serverHandshake performs the simple handshake of section 5.2. S1 carries a
// zero version field, which tells digest-capable clients (FFmpeg, librtmp,
// Flash) not to expect the digest handshake. S0, S1 and S2 are sent together
// once C1 has arrived, as most servers do; C2 is read but not checked,
// because digest clients do not echo S1 verbatim.
func serverHandshake(r io.Reader, w io.Writer, epoch time.Time) error {
	c0c1 := make([]byte, 1+handshakeSize)
	if _, err := io.ReadFull(r, c0c1[:1]); err != nil {
		return fmt.Errorf("read c0: %w", err)
	}
	if c0c1[0] != handshakeVersion {
		return fmt.Errorf("c0 version %d: %w", c0c1[0], ErrBadVersion)
	}
	if _, err := io.ReadFull(r, c0c1[1:]); err != nil {
		return fmt.Errorf("read c1: %w", err)
	}
	c1 := c0c1[1:]

	out := make([]byte, 1+2*handshakeSize)
	out[0] = handshakeVersion
	s1 := out[1 : 1+handshakeSize]
	now := uint32(time.Since(epoch).Milliseconds())
	binary.BigEndian.PutUint32(s1[0:4], now)
	// s1[4:8] stays zero: simple handshake.
	if _, err := rand.Read(s1[8:]); err != nil {
		return fmt.Errorf("random s1: %w", err)
	}
	s2 := out[1+handshakeSize:]
	copy(s2, c1)
	binary.BigEndian.PutUint32(s2[4:8], now)
	if err := writeFlush(w, out); err != nil {
		return fmt.Errorf("write s0s1s2: %w", err)
	}
	c2 := make([]byte, handshakeSize)
	if _, err := io.ReadFull(r, c2); err != nil {
		return fmt.Errorf("read c2: %w", err)
	}
	return nil
}

// clientHandshake is the client side, used by the tests to drive the server
// without external tools. It checks that S2 echoes C1.
func clientHandshake(r io.Reader, w io.Writer) error {
	c0c1 := make([]byte, 1+handshakeSize)
	c0c1[0] = handshakeVersion
	if _, err := rand.Read(c0c1[9:]); err != nil {
		return err
	}
	if err := writeFlush(w, c0c1); err != nil {
		return err
	}
	s := make([]byte, 1+2*handshakeSize)
	if _, err := io.ReadFull(r, s); err != nil {
		return fmt.Errorf("read s0s1s2: %w", err)
	}
	if s[0] != handshakeVersion {
		return fmt.Errorf("s0 version %d: %w", s[0], ErrBadVersion)
	}
	s2 := s[1+handshakeSize:]
	if !bytes.Equal(s2[8:], c0c1[9:]) {
		return errors.New("rtmp: s2 does not echo c1")
	}
	return writeFlush(w, s[1:1+handshakeSize])
}

// writeFlush writes p and flushes w if it buffers.
func writeFlush(w io.Writer, p []byte) error {
	if _, err := w.Write(p); err != nil {
		return err
	}
	if f, ok := w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}
