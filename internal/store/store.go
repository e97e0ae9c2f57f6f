// Package store keeps OnAir's media objects (recordings, thumbnails,
// previews, uploaded images) behind one small interface, so a single node
// keeps them as files in its data directory and several nodes share an
// S3-compatible object store. Keys are slash-separated paths such as
// "shows/42/seg-000001.m4s"; they never start with a slash and never hold
// "." or ".." segments.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// ErrNotExist is returned (wrapped) for a key the store does not hold;
// errors.Is(err, fs.ErrNotExist) is true for it too.
var ErrNotExist = fs.ErrNotExist

// ErrChanged is returned (wrapped) by a read of an open object that was
// replaced since it was opened: the store will not mix the two. Opening it
// again reads the new one.
var ErrChanged = errors.New("the object was replaced while it was read")

// Store keeps objects by key. Implementations are safe for concurrent use.
type Store interface {
	// Put stores body (size bytes, or -1 when unknown) under key,
	// replacing any object there. It returns only once the store has
	// acknowledged the object durably: a caller may record it as saved.
	Put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error
	// Open returns the object for reading. Its Body may be an *os.File
	// (the local store), which lets the HTTP server send it with
	// sendfile(2); the caller closes it.
	Open(ctx context.Context, key string) (*Object, error)
	// Stat describes the object without reading it.
	Stat(ctx context.Context, key string) (Info, error)
	// List returns the objects whose keys start with prefix, by key.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes one object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with prefix
	// (which must end with "/").
	DeletePrefix(ctx context.Context, prefix string) error
	// Ping tells whether the store answers (for /readyz).
	Ping(ctx context.Context) error
	// Kind names the implementation for logs and metrics ("local", "s3").
	Kind() string
}

// Info describes a stored object.
type Info struct {
	Key         string
	Size        int64
	ModTime     time.Time
	ContentType string
	// ETag is an opaque validator of the object's content.
	ETag string
}

// Object is an open stored object.
type Object struct {
	Info
	Body io.ReadSeekCloser
}

// CheckKey refuses keys that could escape the store's namespace.
func CheckKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "\\") {
		return fmt.Errorf("store: invalid key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("store: invalid key %q", key)
		}
	}
	return nil
}

func checkPrefix(prefix string) error {
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("store: prefix %q must end with /", prefix)
	}
	return CheckKey(strings.TrimSuffix(prefix, "/"))
}

// PutBytes stores data under key.
func PutBytes(ctx context.Context, s Store, key string, data []byte, contentType string) error {
	return s.Put(ctx, key, bytes.NewReader(data), int64(len(data)), contentType)
}

// ReadAll returns the whole object. An object replaced while it is read
// (another node rewrote it: a playlist, an index) is read again, up to
// three times in all.
func ReadAll(ctx context.Context, s Store, key string) ([]byte, error) {
	for try := 1; ; try++ {
		data, err := readAll(ctx, s, key)
		if err == nil || !errors.Is(err, ErrChanged) || try == 3 {
			return data, err
		}
	}
}

func readAll(ctx context.Context, s Store, key string) ([]byte, error) {
	obj, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer obj.Body.Close()
	return io.ReadAll(obj.Body)
}

// IsNotExist tells whether err means the key is not stored.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// ContentType guesses the media type of a key from its extension, for the
// files OnAir stores.
func ContentType(key string) string {
	switch ext := key[strings.LastIndexByte(key, '.')+1:]; ext {
	case "m3u8":
		return "application/vnd.apple.mpegurl"
	case "ts":
		return "video/mp2t"
	case "m4s", "mp4":
		return "video/mp4"
	case "m4a":
		return "audio/mp4"
	case "aac":
		return "audio/aac"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "png":
		return "image/png"
	case "webp":
		return "image/webp"
	case "gif":
		return "image/gif"
	case "json", "jsonl":
		return "application/json"
	}
	return "application/octet-stream"
}
