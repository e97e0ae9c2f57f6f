package app

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// Page is the requested page of a list endpoint.
type Page struct {
	Number int
	Size   int
}

// Offset is the number of items before this page.
func (p Page) Offset() int { return (p.Number - 1) * p.Size }

// maxPage keeps OFFSET arithmetic far from overflow.
const maxPage = 1_000_000

// ParsePage reads ?page= (default 1). Anything but a positive integer is 400.
func ParsePage(c *fiber.Ctx, size int) (Page, error) {
	raw := c.Query("page")
	if raw == "" {
		return Page{Number: 1, Size: size}, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxPage {
		return Page{}, BadRequest("page must be a positive integer, got %q", raw)
	}
	return Page{Number: n, Size: size}, nil
}

// List is the pagination envelope of the spec. It marshals its items under
// Key, after page, next_url, prev_url, pages and count.
type List struct {
	Page    int
	NextURL *string
	PrevURL *string
	Pages   int
	Count   int
	Key     string
	Items   any
}

// NewList builds the envelope for a page of items out of count. next_url and
// prev_url are absolute (built on publicURL) and keep every query parameter
// of the request but page. next_url is null on the last page (and past it),
// prev_url null on page 1; an empty list has pages 0.
func NewList(c *fiber.Ctx, publicURL string, p Page, count int, key string, items any) *List {
	pages := (count + p.Size - 1) / p.Size
	l := &List{Page: p.Number, Pages: pages, Count: count, Key: key, Items: items}
	if p.Number < pages {
		u := PageURL(c, publicURL, p.Number+1)
		l.NextURL = &u
	}
	if p.Number > 1 {
		// Past the end, "previous" is the last page that has items (or
		// page 1 of an empty list), not another empty page.
		u := PageURL(c, publicURL, min(p.Number-1, max(pages, 1)))
		l.PrevURL = &u
	}
	return l
}

// PageURL is the request's own absolute URL with page set to n.
func PageURL(c *fiber.Ctx, publicURL string, n int) string {
	args := fiber.AcquireArgs()
	defer fiber.ReleaseArgs(args)
	c.Request().URI().QueryArgs().CopyTo(args)
	args.Set("page", strconv.Itoa(n))
	return publicURL + c.Path() + "?" + string(args.QueryString())
}

// MarshalJSON writes the envelope. Items already encoded (a
// json.RawMessage, such as a cached list's) are written as they are.
func (l *List) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := l.write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Send answers the request with the envelope (200, JSON), written into
// the response's own (pooled) body buffer: the items are copied there
// once from their pooled encoding buffer, no body is allocated for the
// answer, and encoding/json does not validate it a second time as c.JSON
// would.
func (l *List) Send(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Response().ResetBody()
	return l.write(c.Response().BodyWriter())
}

// encodeBuffers are the buffers the items of a list are encoded in
// before they go into the envelope.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer is the largest encoding buffer kept for reuse: a huge
// list does not pin its memory in the pool.
const maxPooledBuffer = 1 << 20

func (l *List) write(w io.Writer) error {
	items, ok := l.Items.(json.RawMessage)
	if !ok {
		buf := encodeBuffers.Get().(*bytes.Buffer)
		buf.Reset()
		defer func() {
			if buf.Cap() <= maxPooledBuffer {
				encodeBuffers.Put(buf)
			}
		}()
		if err := json.NewEncoder(buf).Encode(l.Items); err != nil {
			return err
		}
		items = bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	}
	if bytes.Equal(items, []byte("null")) {
		items = []byte("[]")
	}
	key, _ := json.Marshal(l.Key)
	head := make([]byte, 0, 256)
	head = append(head, `{"page":`...)
	head = strconv.AppendInt(head, int64(l.Page), 10)
	head = append(head, `,"next_url":`...)
	head = appendNullable(head, l.NextURL)
	head = append(head, `,"prev_url":`...)
	head = appendNullable(head, l.PrevURL)
	head = append(head, `,"pages":`...)
	head = strconv.AppendInt(head, int64(l.Pages), 10)
	head = append(head, `,"count":`...)
	head = strconv.AppendInt(head, int64(l.Count), 10)
	head = append(head, ',')
	head = append(head, key...)
	head = append(head, ':')
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(items); err != nil {
		return err
	}
	_, err := w.Write([]byte{'}'})
	return err
}

func appendNullable(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	enc, _ := json.Marshal(*s)
	return append(b, enc...)
}
