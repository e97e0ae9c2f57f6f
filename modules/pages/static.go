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

	"github.com/gofiber/fiber/v2"
)

// staticFiles are the pages' own stylesheet and script and the vendored
// hls.js (see docs/pages.md and static/update-hlsjs.sh). They are part of
// the binary, so `go run .` needs no build step.
//
//go:embed static/*.css static/*.js static/hls.js.LICENSE
var staticFiles embed.FS

// asset is one embedded file, ready to serve: its bytes, a gzip copy when
// that is smaller, and a content hash that versions its URL.
type asset struct {
	name, contentType, etag string
	body, gz                []byte
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
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		if buf.Len() < len(body) {
			a.gz = buf.Bytes()
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
	if a.gz != nil && strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip") {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(a.gz)
	}
	return c.Send(a.body)
}
