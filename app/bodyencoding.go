package app

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// acceptedEncodings is what a request body may be compressed with (the
// Accept-Encoding of a 415, RFC 9110 §12.5.3).
const acceptedEncodings = "gzip, deflate"

// inflateBody bounds what a compressed request body becomes. Fiber's
// c.Body() and fasthttp's MultipartForm inflate a body sent with
// Content-Encoding without any limit: a 200 KB gzip body became 200 MB of
// JSON. This middleware runs before every route (API, pages, console,
// webhooks) and, for a body sent with Content-Encoding:
//   - on a POST, PUT or PATCH, inflates it through a reader capped at the
//     app's BodyLimit (413 beyond, 400 when it is not valid gzip or
//     deflate), then hands the route the plain body without the header, so
//     nothing later inflates it again;
//   - on any other method (a route that takes no body), or with any other
//     encoding, or several, answers 415 with Accept-Encoding.
//
// The compressed body itself is already under BodyLimit (fasthttp reads
// no more), so a request holds at most twice BodyLimit.
func inflateBody(c *fiber.Ctx) error {
	req := c.Request()
	ce := req.Header.Peek(fiber.HeaderContentEncoding)
	if len(ce) == 0 {
		return c.Next()
	}
	enc := strings.ToLower(strings.TrimSpace(string(ce)))
	if enc == "identity" {
		req.Header.Del(fiber.HeaderContentEncoding)
		return c.Next()
	}
	unsupported := func(why string) error {
		c.Set(fiber.HeaderAcceptEncoding, acceptedEncodings)
		return &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: why}
	}
	switch c.Method() {
	case fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch:
	default:
		return unsupported("a " + c.Method() + " request takes no compressed body")
	}
	limit := c.App().Config().BodyLimit
	plain, err := inflate(enc, req.Body(), limit)
	switch {
	case err == errUnknownEncoding:
		return unsupported(fmt.Sprintf("Content-Encoding %q is not accepted; send gzip or deflate", enc))
	case err == errInflatesPastLimit:
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large",
			Message: fmt.Sprintf("the request body inflates past %d bytes", limit)}
	case err != nil:
		return BadRequest("the %s request body is malformed", enc)
	}
	req.SetBodyRaw(plain)
	req.Header.Del(fiber.HeaderContentEncoding)
	req.Header.SetContentLength(len(plain))
	return c.Next()
}

var (
	errUnknownEncoding   = fmt.Errorf("app: unknown content encoding")
	errInflatesPastLimit = fmt.Errorf("app: body inflates past the limit")
)

// inflate decodes body of Content-Encoding enc ("gzip", "x-gzip" or
// "deflate", the zlib format of RFC 9110 §8.4.1.2), reading at most limit
// bytes of output: errInflatesPastLimit when there would be more.
func inflate(enc string, body []byte, limit int) ([]byte, error) {
	var r io.ReadCloser
	var err error
	switch enc {
	case "gzip", "x-gzip":
		r, err = gzip.NewReader(bytes.NewReader(body))
	case "deflate":
		r, err = zlib.NewReader(bytes.NewReader(body))
	default:
		return nil, errUnknownEncoding
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// A guess of the plain size (compressed JSON and forms shrink four to
	// ten times), grown as needed up to limit+1.
	out := bytes.NewBuffer(make([]byte, 0, min(len(body)*4+512, limit+1)))
	n, err := out.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errInflatesPastLimit
	}
	return out.Bytes(), nil
}
