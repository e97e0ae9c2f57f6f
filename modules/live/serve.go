package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/onair/onair/app"

	"github.com/onair/onair/internal/httprange"
	"github.com/onair/onair/internal/store"
)

// presignFor is how long a presigned media URL lasts; a redirect to one
// may be cached for presignCache.
const (
	presignFor   = time.Hour
	presignCache = 5 * time.Minute
)

// mediaType is the Content-Type of a media file by extension.
func mediaType(ext string) string {
	switch ext {
	case ".m3u8":
		return "application/vnd.apple.mpegurl"
	case ".ts":
		return "video/mp2t"
	case ".jpg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	}
	return "application/octet-stream"
}

// sendStored answers from the media store: a redirect to a presigned URL
// when clients reach the store, else the object streamed through this
// node. Playlists are never redirected: the segment URIs in them are
// relative, so they must resolve against this node's URL (with a private
// show's token), whose segments then redirect. skip asks for a live
// playlist's delta update.
func (m *Module) sendStored(c *fiber.Ctx, id int64, file string, live, skip bool) error {
	key := mediaKey(id, file)
	if m.presign != nil && filepath.Ext(file) != ".m3u8" {
		u, err := m.presign.Presign(c.UserContext(), key, presignFor)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "private, max-age="+strconv.Itoa(int(presignCache/time.Second)))
		return c.Redirect(u, fiber.StatusFound)
	}
	// The object outlives the handler (fasthttp streams it after), so it
	// is not tied to the request's context.
	obj, err := m.core.Store.Open(context.WithoutCancel(c.UserContext()), key)
	if store.IsNotExist(err) {
		c.Response().Header.Del(fiber.HeaderCacheControl)
		return fiber.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("live: media store: %w", err)
	}
	if live {
		defer obj.Body.Close()
		data, err := io.ReadAll(io.LimitReader(obj.Body, obj.Size))
		if err != nil {
			return fmt.Errorf("live: media store: %w", err)
		}
		return c.Send(playlistBody(data, skip))
	}
	return httprange.Send(c, obj.Body, obj.Size, obj.ModTime, obj.ETag)
}

// localETag is a validator of a working file, from its time and size.
func localETag(fi os.FileInfo) string { return fileETag(fi.ModTime(), fi.Size()) }

// fileETag is the validator of a file of that time and size.
func fileETag(mod time.Time, size int64) string {
	return `"` + strconv.FormatInt(mod.UnixNano(), 36) + "-" + strconv.FormatInt(size, 36) + `"`
}

// sendMemory answers GET and HEAD with a file of the live stream held in
// memory (from mediaCache.get), like httprange.Send a file on disk: a
// playlist's bytes are handed to fasthttp as they are, a segment or part
// goes from its memory file with sendfile(2).
func sendMemory(c *fiber.Ctx, f *memFile) error {
	start, length, send := httprange.Validators(c, f.etag, f.lastMod, f.size)
	if !send {
		f.done()
		return nil
	}
	if f.shm != nil {
		c.Response().SetBodyStream(f.shm.body(c.Context().Conn(), f.off+start, length), int(length))
		return nil
	}
	c.Response().SetBodyRaw(f.body[start : start+length])
	return nil
}

// FrontRoutes: the server's front (app/front.go) answers a public show's
// live files held in memory (the playlists, parts and segments of its
// live edge) without Fiber's context, router and middleware; servePublic
// answers the rest.
func (m *Module) FrontRoutes() []app.FrontRoute {
	return []app.FrontRoute{{Prefix: frontPrefix, Route: "/media/shows/:id/:file", Serve: m.serveFront}}
}

const frontPrefix = "/media/shows/"

// serveFront answers GET or HEAD /media/shows/{id}/{file} as servePublic
// and sendMedia would, for the requests whose answer needs nothing but
// memory: a show whose visibility is cached (public), ingested on this
// node, a file held in memory, no query (no blocking reload, delta update
// or session token), no Range, If-None-Match or If-Range, no proxied
// request. It returns false, having changed nothing, for every other
// request.
func (m *Module) serveFront(fc *fasthttp.RequestCtx) bool {
	if m.front.off.Load() {
		return false
	}
	rest := fc.URI().PathOriginal()[len(frontPrefix):]
	slash := bytes.IndexByte(rest, '/')
	if slash < 1 || slash > 18 || len(fc.URI().QueryString()) != 0 {
		return false
	}
	var id int64
	for _, d := range rest[:slash] {
		if d < '0' || d > '9' {
			return false
		}
		id = id*10 + int64(d-'0')
	}
	file := unsafeString(rest[slash+1:]) // a view of the request: not kept
	if id < 1 || !mediaFile(file) {
		return false
	}
	req := &fc.Request.Header
	if len(req.Peek(fiber.HeaderRange)) != 0 || len(req.Peek(fiber.HeaderIfNoneMatch)) != 0 ||
		len(req.Peek(fiber.HeaderIfRange)) != 0 || len(req.Peek(headerProxied)) != 0 {
		return false
	}
	if m.cluster != nil && !m.cluster.host.ingests(id) {
		return false
	}
	now := fc.Time()
	if exists, public, ok := m.vis.cached(id, now); !ok || !exists || !public {
		return false
	}
	mf := m.media.get(id, file)
	if mf == nil {
		return false
	}
	if hook := m.front.hook.Load(); hook != nil {
		(*hook)()
	}
	ext := filepath.Ext(file)
	live := ext == ".m3u8" && !isArchivePlaylist(file)
	if live {
		who := m.viewerFrom(id, fc.RemoteIP().String(), "", unsafeString(req.UserAgent()))
		m.viewers.saw(id, who, now)
	}
	h := &fc.Response.Header
	setMediaHeaders(h, mediaType(ext), cachePolicy("public", ext, live))
	httprange.Headers(h, mf.etag, mf.lastMod)
	if fc.IsHead() {
		h.SetContentLength(int(mf.size))
		fc.Response.SkipBody = true
		mf.done()
		return true
	}
	if mf.shm != nil {
		fc.Response.SetBodyStream(mf.shm.body(fc.Conn(), mf.off, mf.size), int(mf.size))
	} else {
		fc.Response.SetBodyRaw(mf.body)
	}
	return true
}

// frontTest lets tests turn the front off (every request goes to Fiber)
// and run a hook where it answers (export_test.go).
type frontTest struct {
	off  atomic.Bool
	hook atomic.Pointer[func()]
}

// unsafeString is a view of b as a string, for a lookup or a hash that
// does not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
