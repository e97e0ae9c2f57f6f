//go:build !linux

package srt

import (
	"syscall"
	"time"
)

func enableRxTime(syscall.RawConn) {}

func rxTime([]byte) (time.Time, bool) { return time.Time{}, false }
