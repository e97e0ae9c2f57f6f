package pages

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// staticFiles are the pages' own stylesheet and scripts, the vendored
// hls.js and the vendored Redoc of /docs (see docs/pages.md,
// static/update-hlsjs.sh and static/update-redoc.sh). They are part of the
// binary, so `go run .` needs no build step.
//
//go:embed static/*.css static/*.js static/*.LICENSE
var staticFiles embed.FS

// asset is one embedded file, ready to serve: its bytes, a gzip copy when
// that is smaller (made on the first request that accepts gzip: Redoc's
// 2 MB would cost every start-up, and every test's, a quarter second), and
// a content hash that versions its URL.
type asset struct {
	name, contentType, etag string
	body                    []byte
	gzOnce                  sync.Once
	gz                      []byte
}

// gzipped is the gzip copy of the body, or nil when it is no smaller.
func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(a.body)
		zw.Close()
		if buf.Len() < len(a.body) {
			a.gz = buf.Bytes()
		}
	})
	return a.gz
}

// assets holds every embedded file by name.
type assets map[string]*asset

func loadAssets() (assets, error) {
	out := assets{}
	err := fs.WalkDir(staticFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := staticFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{name: path.Base(p), body: body, etag: hex.EncodeToString(sum[:8])}
		a.contentType = mime.TypeByExtension(path.Ext(p))
		switch {
		case strings.HasSuffix(p, ".js"):
			a.contentType = "text/javascript; charset=utf-8"
		case strings.HasSuffix(p, ".css"):
			a.contentType = "text/css; charset=utf-8"
		case a.contentType == "":
			a.contentType = "text/plain; charset=utf-8"
		}
		out[a.name] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pages: static files: %w", err)
	}
	return out, nil
}

// URL is the versioned address of an asset: the hash changes with the
// content, so browsers may cache it for a year.
func (as assets) URL(name string) string {
	a, ok := as[name]
	if !ok {
		panic("pages: no static file " + name)
	}
	return "/static/" + name + "?v=" + a.etag
}

// serve answers GET /static/:file.
func (as assets) serve(c *fiber.Ctx) error {
	a, ok := as[c.Params("file")]
	if !ok {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	c.Set(fiber.HeaderETag, `"`+a.etag+`"`)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	c.Set("X-Content-Type-Options", "nosniff")
	if c.Query("v") == a.etag {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	}
	if c.Get(fiber.HeaderIfNoneMatch) == `"`+a.etag+`"` {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip") {
		if gz := a.gzipped(); gz != nil {
			c.Set(fiber.HeaderContentEncoding, "gzip")
			return c.Send(gz)
		}
	}
	return c.Send(a.body)
}
