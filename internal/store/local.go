package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Local keeps objects as files under a root directory: the single-node
// default. A Put is written to a temporary file, synced and renamed into
// place, so a reader never sees half an object and an acknowledged one
// survives a crash.
type Local struct {
	root string
}

// NewLocal returns a store rooted at dir, creating it if needed.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Local{root: abs}, nil
}

// Root is the directory the objects live in.
func (l *Local) Root() string { return l.root }

// Path is the file of a key (for tools that need the file itself, such as
// ffmpeg reading a segment).
func (l *Local) Path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

func (l *Local) Kind() string { return "local" }

func (l *Local) Put(ctx context.Context, key string, body io.Reader, size int64, _ string) error {
	path, err := l.Path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	tmp := f.Name()
	n, err := io.Copy(f, body)
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("wrote %d bytes, want %d", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	return ctx.Err()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Local) Open(_ context.Context, key string) (*Object, error) {
	path, err := l.Path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("store: open %s: %w", key, fs.ErrNotExist)
	}
	return &Object{Info: l.info(key, fi), Body: f}, nil
}

func (l *Local) Stat(_ context.Context, key string) (Info, error) {
	path, err := l.Path(key)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return Info{}, fmt.Errorf("store: stat %s: %w", key, err)
	}
	return l.info(key, fi), nil
}

func (l *Local) info(key string, fi fs.FileInfo) Info {
	return Info{
		Key: key, Size: fi.Size(), ModTime: fi.ModTime(), ContentType: ContentType(key),
		ETag: `"` + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + "-" + strconv.FormatInt(fi.Size(), 36) + `"`,
	}
}

func (l *Local) List(_ context.Context, prefix string) ([]Info, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	base := filepath.Join(l.root, filepath.FromSlash(prefix))
	var out []Info
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil // temporary files of a Put in progress
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(l.root, path)
		if err != nil {
			return err
		}
		out = append(out, l.info(filepath.ToSlash(rel), fi))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (l *Local) Delete(_ context.Context, key string) error {
	path, err := l.Path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	return nil
}

func (l *Local) DeletePrefix(_ context.Context, prefix string) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(l.root, filepath.FromSlash(prefix))); err != nil {
		return fmt.Errorf("store: delete %s: %w", prefix, err)
	}
	return nil
}

func (l *Local) Ping(context.Context) error {
	if _, err := os.Stat(l.root); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

var _ Store = (*Local)(nil)
