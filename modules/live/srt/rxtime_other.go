//go:build !linux

package srt

import (
	"time"
)

func enableRxTime(int) {}

func rxTime([]byte) (time.Time, bool) { return time.Time{}, false }
