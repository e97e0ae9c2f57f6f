package hls

import (
	"fmt"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// swapFile replaces name in dir with data, as replaceFile does, for a
// file rewritten all stream long (a rendition's live playlist) without
// making a new file each time: the temporary file is overwritten in
// place and exchanged with the published one (renameat2 with
// RENAME_EXCHANGE), so that it holds the previous version until the next
// call. A new file costs ext4 an inode allocation that searches the inode
// bitmap (without a journal, skipping every recently deleted inode) and
// the old one's release, and replacing a file by rename or O_TRUNC makes
// it write the new data back at once (auto_da_alloc); one exchange costs
// neither. Readers see the old file or the new one whole, as with rename.
// The temporary file, a dot file like replaceFile's, stays until
// removeSwap. Where the exchange is refused (an older kernel, a file
// system without it, no published file yet) it falls back to rename.
func swapFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	err := overwrite(tmp, data)
	if err == nil {
		err = retryEINTR(func() error {
			return unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, filepath.Join(dir, name), unix.RENAME_EXCHANGE)
		})
		if err != nil {
			err = retryEINTR(func() error { return syscall.Rename(tmp, filepath.Join(dir, name)) })
		}
	}
	if err != nil {
		syscall.Unlink(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// overwrite writes data over path from its start, creating it if needed,
// and cuts it to data's length. It never truncates to zero, which would
// make ext4 write the data back when the file is closed.
func overwrite(path string, data []byte) error {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return err
	}
	var off int64
	for b := data; len(b) > 0 && err == nil; {
		var n int
		if n, err = syscall.Pwrite(fd, b, off); err == syscall.EINTR {
			err = nil
		}
		b = b[max(n, 0):]
		off += int64(max(n, 0))
	}
	if err == nil {
		err = retryEINTR(func() error { return syscall.Ftruncate(fd, int64(len(data))) })
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	return err
}
