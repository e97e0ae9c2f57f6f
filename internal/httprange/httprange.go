// Package httprange answers GET and HEAD with a seekable body the way
// players and download managers expect: ETag and Last-Modified,
// If-None-Match (304), one byte Range (206, 416 past the end) under
// If-Range. A file is handed to fasthttp so it goes out with sendfile(2),
// ranges included.
//
// The live module's media (modules/live/serve.go, media.go) and the
// downloads module's files are answered with it.
package httprange

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Send answers GET and HEAD with body (size bytes): Validators, then the
// bytes asked for. It closes body, now or once fasthttp has sent it.
func Send(c *fiber.Ctx, body io.ReadSeekCloser, size int64, mod time.Time, etag string) error {
	if etag != "" && !strings.HasPrefix(etag, `"`) && !strings.HasPrefix(etag, "W/") {
		etag = `"` + etag + `"`
	}
	lastMod := ""
	if !mod.IsZero() {
		lastMod = mod.UTC().Format(http.TimeFormat)
	}
	start, length, send := Validators(c, etag, lastMod, size)
	if !send {
		body.Close()
		return nil
	}
	if start > 0 {
		if _, err := body.Seek(start, io.SeekStart); err != nil {
			body.Close()
			return fmt.Errorf("httprange: seek: %w", err)
		}
	}
	if f, ok := body.(*os.File); ok {
		if length == size {
			c.Response().SetBodyStream(f, int(size)) // sendfile, closed by fasthttp once sent
		} else {
			c.Response().SetBodyStream(FileRange(f, length), int(length))
		}
		return nil
	}
	c.Response().SetBodyStream(&limitedBody{Reader: io.LimitReader(body, length), c: body}, int(length))
	return nil
}

// Validators sets an answer's ETag and Last-Modified (each unless empty)
// and Accept-Ranges, then applies the request's If-None-Match (304), Range
// and If-Range (206, 416) to a body of size bytes and sets the status.
// send is false when no body follows (a 304 or 416, or a HEAD); otherwise
// the body's bytes start, length are to follow. Callers that hold their
// bytes elsewhere (memory, part of a file) send them themselves.
func Validators(c *fiber.Ctx, etag, lastMod string, size int64) (start, length int64, send bool) {
	Headers(&c.Response().Header, etag, lastMod)
	start, length, answered := negotiate(c, size, etag)
	return start, length, !answered && c.Method() != fiber.MethodHead
}

// Headers sets the validators ETag and Last-Modified (each unless empty)
// and Accept-Ranges, as Validators does before it negotiates.
// The keys are given as fasthttp normalizes them (ETag as Etag), so that
// setting them copies no key and normalizes nothing on every request.
func Headers(h *fasthttp.ResponseHeader, etag, lastMod string) {
	if etag != "" {
		h.SetCanonical(keyETag, unsafeBytes(etag))
	}
	if lastMod != "" {
		h.SetCanonical(keyLastModified, unsafeBytes(lastMod))
	}
	h.SetCanonical(keyAcceptRanges, valueBytes)
}

// The normalized keys and the fixed value of Headers.
var (
	keyETag         = []byte("Etag")
	keyLastModified = []byte(fiber.HeaderLastModified)
	keyAcceptRanges = []byte(fiber.HeaderAcceptRanges)
	valueBytes      = []byte("bytes")
)

// unsafeBytes is a read-only view of s (SetCanonical copies it).
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// negotiate applies If-None-Match, Range and If-Range and sets the
// status. answered is true when nothing more is to be sent (304, 416); a
// HEAD gets the length it would have had.
func negotiate(c *fiber.Ctx, size int64, etag string) (start, length int64, answered bool) {
	if etag != "" && MatchETag(c.Get(fiber.HeaderIfNoneMatch), etag) {
		_ = c.SendStatus(fiber.StatusNotModified)
		return 0, 0, true
	}
	start, length, status := int64(0), size, fiber.StatusOK
	if r := c.Get(fiber.HeaderRange); r != "" && ifRange(c.Get(fiber.HeaderIfRange), etag) {
		s, l, ok, satisfiable := Parse(r, size)
		switch {
		case !satisfiable:
			// A 416 is not the resource: it is not to be cached as one.
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

// Parse reads a Range header of one byte range against size. ok is false
// for a header to ignore (malformed, or several ranges: the whole body is
// sent); satisfiable is false when the range starts past the end.
func Parse(h string, size int64) (start, length int64, ok, satisfiable bool) {
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

// MatchETag tells whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for it).
func MatchETag(header, etag string) bool {
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

// FileRange is the next n bytes of f from its current offset, as a body
// for fasthttp's SetBodyStream that goes out with sendfile(2) and closes f
// once sent.
func FileRange(f *os.File, n int64) io.ReadCloser { return &fileRange{f: f, n: n} }

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
