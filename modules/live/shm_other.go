//go:build !linux

package live

import (
	"errors"
	"io"
	"net"
)

// shmFile is Linux's memory file (shm_linux.go); elsewhere segments are
// kept as bytes.
type shmFile struct{}

func newShm(string, []byte) (*shmFile, error) { return nil, errors.ErrUnsupported }

func (*shmFile) writeAt([]byte, int64) error { return errors.ErrUnsupported }

func (*shmFile) acquire() {}

func (*shmFile) release() {}

func (*shmFile) body(net.Conn, int64, int64) io.ReadCloser { panic("live: no memory files here") }
