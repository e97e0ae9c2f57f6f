//go:build !(linux || darwin || freebsd)

package live

import "errors"

func freeBytes(string) (uint64, error) {
	return 0, errors.New("free space unknown on this system")
}
