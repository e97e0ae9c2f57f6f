package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

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
	return sendContent(c, obj.Body, obj.Size, obj.ModTime, obj.ETag)
}

// localETag is a validator of a working file, from its time and size.
func localETag(fi os.FileInfo) string { return fileETag(fi.ModTime(), fi.Size()) }

// fileETag is the validator of a file of that time and size.
func fileETag(mod time.Time, size int64) string {
	return `"` + strconv.FormatInt(mod.UnixNano(), 36) + "-" + strconv.FormatInt(size, 36) + `"`
}

// localBody is an open working file.
type localBody struct{ *os.File }

// sendContent answers GET and HEAD with body (size bytes), honouring
// If-None-Match (304) and a single byte Range (206; 416 when it starts
// past the end; several ranges get the whole body). It closes body, now or
// once fasthttp has sent it; a working file is sent with sendfile(2),
// ranges included.
func sendContent(c *fiber.Ctx, body io.ReadSeekCloser, size int64, mod time.Time, etag string) error {
	if etag != "" && !strings.HasPrefix(etag, `"`) && !strings.HasPrefix(etag, "W/") {
		etag = `"` + etag + `"`
	}
	lastMod := ""
	if !mod.IsZero() {
		lastMod = mod.UTC().Format(http.TimeFormat)
	}
	start, length, send := validators(c, etag, lastMod, size)
	if !send {
		body.Close()
		return nil
	}
	if start > 0 {
		if _, err := body.Seek(start, io.SeekStart); err != nil {
			body.Close()
			return fmt.Errorf("live: seek media: %w", err)
		}
	}
	if f, ok := body.(localBody); ok {
		if length == size {
			c.Response().SetBodyStream(f.File, int(size)) // sendfile, closed by fasthttp once sent
		} else {
			c.Response().SetBodyStream(&fileRange{f: f.File, n: length}, int(length))
		}
		return nil
	}
	c.Response().SetBodyStream(&limitedBody{Reader: io.LimitReader(body, length), c: body}, int(length))
	return nil
}

// validators sets a media answer's ETag and Last-Modified (each unless
// empty) and Accept-Ranges, then negotiates (negotiate). send is false
// when no body follows: a 304 or 416, or a HEAD.
func validators(c *fiber.Ctx, etag, lastMod string, size int64) (start, length int64, send bool) {
	h := &c.Response().Header
	if etag != "" {
		h.Set(fiber.HeaderETag, etag)
	}
	if lastMod != "" {
		h.Set(fiber.HeaderLastModified, lastMod)
	}
	h.Set(fiber.HeaderAcceptRanges, "bytes")
	start, length, answered := negotiate(c, size, etag)
	return start, length, !answered && c.Method() != fiber.MethodHead
}

// negotiate applies the request's If-None-Match (304), Range and If-Range
// (206, 416) to a body of size bytes whose ETag is etag, and sets the
// status. answered is true when nothing more is to be sent (304, 416);
// otherwise the body's bytes start, length are to follow (for HEAD, only
// their length is set).
func negotiate(c *fiber.Ctx, size int64, etag string) (start, length int64, answered bool) {
	if etag != "" && matchETag(c.Get(fiber.HeaderIfNoneMatch), etag) {
		_ = c.SendStatus(fiber.StatusNotModified)
		return 0, 0, true
	}
	start, length, status := int64(0), size, fiber.StatusOK
	if r := c.Get(fiber.HeaderRange); r != "" && ifRange(c.Get(fiber.HeaderIfRange), etag) {
		s, l, ok, satisfiable := parseRange(r, size)
		switch {
		case !satisfiable:
			c.Set(fiber.HeaderContentRange, "bytes */"+strconv.FormatInt(size, 10))
			c.Response().Header.Del(fiber.HeaderCacheControl)
			_ = c.SendStatus(fiber.StatusRequestedRangeNotSatisfiable)
			return 0, 0, true
		case ok:
			start, length, status = s, l, fiber.StatusPartialContent
			c.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes %d-%d/%d", s, s+l-1, size))
		}
	}
	c.Status(status)
	if c.Method() == fiber.MethodHead {
		c.Response().Header.SetContentLength(int(length))
		c.Response().SkipBody = true
	}
	return start, length, false
}

// sendMemory answers GET and HEAD with a file of the live stream held in
// memory (from mediaCache.get), like sendContent a file on disk: a
// playlist's bytes are handed to fasthttp as they are, a segment or part
// goes from its memory file with sendfile(2).
func sendMemory(c *fiber.Ctx, f *memFile) error {
	start, length, send := validators(c, f.etag, f.lastMod, f.size)
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

// fileRange sends part of a file with sendfile(2): fasthttp hands an
// io.WriterTo its buffered connection writer, whose ReadFrom passes an
// *io.LimitedReader of an *os.File to the socket's sendfile path once the
// buffered headers are flushed.
type fileRange struct {
	f *os.File
	n int64
}

func (r *fileRange) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, err := r.f.Read(p)
	r.n -= int64(n)
	return n, err
}

func (r *fileRange) WriteTo(w io.Writer) (int64, error) {
	if bw, ok := w.(*bufio.Writer); ok {
		if err := bw.Flush(); err != nil {
			return 0, err
		}
	}
	lr := &io.LimitedReader{R: r.f, N: r.n}
	n, err := io.Copy(w, lr)
	r.n = lr.N
	return n, err
}

func (r *fileRange) Close() error { return r.f.Close() }

// limitedBody is a part of a stored object, closed with it.
type limitedBody struct {
	io.Reader
	c io.Closer
}

func (b *limitedBody) Close() error { return b.c.Close() }

// parseRange reads a Range header of one byte range against size. ok is
// false for a header to ignore (malformed, or several ranges: the whole
// body is sent); satisfiable is false when the range starts past the end.
func parseRange(h string, size int64) (start, length int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, true
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, true
	}
	if first == "" { // the last n bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false, true
		}
		if n == 0 || size == 0 {
			return 0, 0, false, false
		}
		n = min(n, size)
		return size - n, n, true, true
	}
	s, err := strconv.ParseInt(first, 10, 64)
	if err != nil || s < 0 {
		return 0, 0, false, true
	}
	e := size - 1
	if last != "" {
		if e, err = strconv.ParseInt(last, 10, 64); err != nil || e < s {
			return 0, 0, false, true
		}
		e = min(e, size-1)
	}
	if s >= size {
		return 0, 0, false, false
	}
	return s, e - s + 1, true, true
}

// matchETag tells whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for it).
func matchETag(header, etag string) bool {
	if header == "" {
		return false
	}
	if strings.TrimSpace(header) == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == want {
			return true
		}
	}
	return false
}

// ifRange tells whether a Range applies under an If-Range header: only
// when the header is absent or names the current (strong) ETag. A date
// there is not trusted: the whole body is sent.
func ifRange(header, etag string) bool {
	return header == "" || (etag != "" && !strings.HasPrefix(etag, "W/") && header == etag)
}
