package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

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
