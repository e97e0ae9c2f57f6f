//go:build !linux

package hls

// swapFile replaces name in dir with data: replaceFile where there is no
// exchange of two files (see swap_linux.go).
func swapFile(dir, name string, data []byte) error {
	return replaceFile(dir, name, data)
}
