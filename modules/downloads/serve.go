package downloads

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/httprange"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/modules/shows"
)

// Download links of a private show carry a token in the path,
// /downloads/shows/{id}/t/{expiry}.{signature}/{file}, like its media
// (modules/live/media.go): it lasts between signedFor and signedFor+1h,
// the expiry rounded up to the hour so a show's links stay stable for an
// hour.
const signedFor = 6 * time.Hour

// signer makes and checks the HMAC tokens of private shows' downloads.
type signer struct{ key []byte }

func (s signer) mac(showID, expiry int64) string {
	h := hmac.New(sha256.New, s.key)
	fmt.Fprintf(h, "download.%d.%d", showID, expiry)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (s signer) token(showID int64, now time.Time) string {
	exp := now.Add(signedFor).Truncate(time.Hour).Add(time.Hour).Unix()
	return fmt.Sprintf("%d.%s", exp, s.mac(showID, exp))
}

func (s signer) valid(showID int64, token string, now time.Time) bool {
	expRaw, sig, ok := strings.Cut(token, ".")
	exp, err := strconv.ParseInt(expRaw, 10, 64)
	if !ok || err != nil || now.Unix() > exp {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.mac(showID, exp)))
}

// URL is the download link of a show's file (AudioFile or VideoFile),
// signed when the show is private.
func (m *Module) URL(sh *shows.Show, file string) string {
	base := m.core.Config.PublicURL + "/downloads/shows/" + strconv.FormatInt(sh.ID, 10) + "/"
	if sh.Private {
		return base + "t/" + m.signer.token(sh.ID, time.Now()) + "/" + file
	}
	return base + file
}

// links is the shows module's downloads hook: it is asked only for
// archived shows whose owner allows downloads, and only callers allowed to
// see the show get its view, so only they get a private show's signed
// links. Audio is offered for a show with audio, video for a show with
// video; a show with neither (archived by hand, say) offers none.
func (m *Module) links(sh *shows.Show) *shows.Downloads {
	if sh.AudioURL == nil && sh.VideoURL == nil {
		return nil
	}
	d := &shows.Downloads{}
	if sh.AudioURL != nil {
		a := m.URL(sh, AudioFile)
		d.Audio = &a
	}
	if sh.VideoURL != nil {
		v := m.URL(sh, VideoFile)
		d.Video = &v
	}
	return d
}

// servePublic answers /downloads/shows/:id/:file for public shows.
func (m *Module) servePublic(c *fiber.Ctx) error {
	return m.serve(c, false)
}

// serveSigned answers /downloads/shows/:id/t/:token/:file: any show, with
// a valid token.
func (m *Module) serveSigned(c *fiber.Ctx) error {
	return m.serve(c, true)
}

func (m *Module) serve(c *fiber.Ctx, signed bool) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	file := c.Params("file")
	if err != nil || id < 1 || (file != AudioFile && file != VideoFile) {
		return app.NotFound("download")
	}
	if signed && !m.signer.valid(id, c.Params("token"), time.Now()) {
		return app.Forbidden("download link expired or invalid")
	}
	ctx := c.UserContext()
	sh, err := m.shows.Get(ctx, id)
	if errors.Is(err, shows.ErrNotFound) {
		return app.NotFound("download")
	}
	if err != nil {
		return err
	}
	if m.ffmpeg == "" || !sh.Archive || sh.DownloadsOff || (!signed && (sh.Private || sh.Off)) {
		return app.NotFound("download")
	}
	ready, err := m.Ready(ctx, []int64{id})
	if err != nil {
		return err
	}
	f, ok := ready[id]
	if !ok {
		return &app.Error{Status: fiber.StatusServiceUnavailable, Code: "preparing",
			Message: "the download is being prepared; try again in a minute", RetryAfter: 30}
	}
	if (file == VideoFile && f.VideoSize == 0) || (file == AudioFile && f.AudioSize == 0) {
		return app.NotFound("download")
	}
	// The object outlives the handler (fasthttp streams it after), so it
	// is not tied to the request's context.
	obj, err := m.core.Store.Open(context.WithoutCancel(ctx), key(id, file))
	if store.IsNotExist(err) {
		return app.NotFound("download")
	}
	if err != nil {
		return fmt.Errorf("downloads: open show %d %s: %w", id, file, err)
	}
	cache := "public, max-age=86400"
	if signed {
		cache = "private, max-age=86400"
	}
	h := &c.Response().Header
	h.Set(fiber.HeaderContentType, contentType(file))
	h.Set(fiber.HeaderCacheControl, cache)
	h.Set(fiber.HeaderContentDisposition, Disposition(sh.Name, id, file))
	h.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	h.Set(fiber.HeaderAccessControlExposeHeaders, "Content-Length, Content-Range, Accept-Ranges, Content-Disposition")
	return httprange.Send(c, obj.Body, obj.Size, obj.ModTime, obj.ETag)
}

// Disposition is the Content-Disposition of a show's file: an attachment
// named after the show (characters a file system refuses replaced), with
// the file's extension; beyond ASCII, also the UTF-8 name (RFC 6266).
func Disposition(showName string, id int64, file string) string {
	var b strings.Builder
	for _, r := range showName {
		switch {
		case unicode.IsControl(r), strings.ContainsRune(`/\:*?"<>|`, r):
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	name := strings.Join(strings.Fields(b.String()), " ")
	name = strings.Trim(name, ". ")
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100])
	}
	if name == "" {
		name = "show-" + strconv.FormatInt(id, 10)
	}
	ext := ".m4a"
	if file == VideoFile {
		ext = ".mp4"
	}
	name += ext
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '_'
		}
		return r
	}, name)
	d := `attachment; filename="` + ascii + `"`
	if ascii != name {
		// RFC 6266: the UTF-8 name for clients that read it, the ASCII
		// one for the others.
		d += "; filename*=UTF-8''" + extValue(name)
	}
	return d
}

// extValue percent-encodes s as an RFC 8187 value: every byte but the
// attr-chars.
func extValue(s string) string {
	const attr = "!#$&+-.^_`|~"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(attr, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
