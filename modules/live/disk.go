package live

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/onair/onair/modules/live/rtmp"
)

// SettingMediaMinFree is the free space a publish needs on the disk of
// the media working directory.
const SettingMediaMinFree = "ONAIR_MEDIA_MIN_FREE_MB"

// errDiskFull is what a publisher is told when the media disk has no room:
// a new publish is refused before anything is written, and a publication
// whose segment could not be written ends there (the segment is dropped,
// the show waits in the reconnect window).
var (
	errDiskFullRefused = &rtmp.StatusError{Code: "NetStream.Publish.Rejected",
		Description: "The server's media disk is full; try again later."}
	errDiskFullFailed = &rtmp.StatusError{Code: "NetStream.Failed",
		Description: "The server's media disk is full; the publication ended."}
)

// diskFull tells whether err is a write refused for want of space (or of
// quota).
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// checkRoom refuses a publish when the media directory's disk has less
// than ONAIR_MEDIA_MIN_FREE_MB free (0: never).
func (m *Module) checkRoom(show int64, remote string) error {
	if m.minFree == 0 {
		return nil
	}
	free, err := freeBytes(m.root)
	if err != nil {
		m.core.Log.Warn("live: cannot measure the media disk's free space", "dir", m.root, "err", err)
		return nil
	}
	if free >= m.minFree {
		return nil
	}
	m.core.Log.Error("publish refused: media disk full", "show", show, "remote", remote, "dir", m.root,
		"free_mb", free>>20, "needed_mb", m.minFree>>20)
	return &rtmp.StatusError{Code: errDiskFullRefused.Code, Description: errDiskFullRefused.Description,
		Err: fmt.Errorf("live: %s: %d MiB free, %s needs %d", m.root, free>>20, SettingMediaMinFree, m.minFree>>20)}
}
