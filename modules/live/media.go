package live

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/httprange"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/shows"
)

// Media URLs of a private show carry a token in the path,
// /media/shows/{id}/t/{expiry}.{signature}/{file}, so that the relative
// segment URIs inside a playlist inherit it and a plain web player works.
// Tokens last between signedFor and signedFor+1h: the expiry is rounded up
// to the hour so one show's URLs stay stable (and cacheable) for an hour.
const signedFor = 6 * time.Hour

// mediaFile tells whether name is a media file name the live module
// serves: 1–64 of [a-z0-9_-], then .m3u8, .ts, .jpg or .gif. It is
// checked on every media request, so by hand rather than by a regular
// expression (2 % of a playlist request's CPU).
func mediaFile(name string) bool {
	dot := strings.LastIndexByte(name, '.')
	if dot < 1 || dot > 64 {
		return false
	}
	switch name[dot+1:] {
	case "m3u8", "ts", "jpg", "gif":
	default:
		return false
	}
	for i := range dot {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// signer makes and checks the HMAC tokens of private media.
type signer struct{ key []byte }

// signingSecret names the media signing key among the install's secrets
// (app.Core.Secret), so every node signs and verifies with the same key.
const signingSecret = "live.media-signing"

// loadSigner takes the install's signing key from the kernel. A key that
// an earlier release kept in the data dir (legacy) is imported on first
// start, so the URLs it signed stay valid; the file is then renamed
// *.imported and no longer read.
func loadSigner(ctx context.Context, core *app.Core, legacy string) (*signer, error) {
	old, err := os.ReadFile(legacy)
	if err != nil || len(old) < 32 || len(old) > 64 {
		key, err := core.Secret(ctx, signingSecret)
		if err != nil {
			return nil, fmt.Errorf("live: signing key: %w", err)
		}
		return &signer{key: key}, nil
	}
	key, err := core.ImportSecret(ctx, signingSecret, old)
	if err != nil {
		return nil, fmt.Errorf("live: signing key: %w", err)
	}
	if err := os.Rename(legacy, legacy+".imported"); err != nil {
		return nil, fmt.Errorf("live: signing key: %w", err)
	}
	core.Log.Info("live: the media signing key of the data dir is now kept by the install", "was", legacy)
	return &signer{key: key}, nil
}

func (s *signer) mac(showID, expiry int64) string {
	h := hmac.New(sha256.New, s.key)
	fmt.Fprintf(h, "%d.%d", showID, expiry)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// token is a fresh path token for the show.
func (s *signer) token(showID int64, now time.Time) string {
	exp := now.Add(signedFor).Truncate(time.Hour).Add(time.Hour).Unix()
	return fmt.Sprintf("%d.%s", exp, s.mac(showID, exp))
}

// valid checks a token in constant time and its expiry.
func (s *signer) valid(showID int64, token string, now time.Time) bool {
	expRaw, sig, ok := strings.Cut(token, ".")
	exp, err := strconv.ParseInt(expRaw, 10, 64)
	if !ok || err != nil || now.Unix() > exp {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.mac(showID, exp)))
}

// signURL is the shows module's media signer: the media URLs of a private
// show get a token. Only callers allowed to see the show get its View, so
// only they get working URLs.
func (m *Module) signURL(sh *shows.Show, raw string) string {
	prefix := fmt.Sprintf("%s/media/shows/%d/", m.core.Config.PublicURL, sh.ID)
	if !sh.Private || !strings.HasPrefix(raw, prefix) {
		return raw
	}
	file := strings.TrimPrefix(raw, prefix)
	if !mediaFile(file) {
		return raw
	}
	return prefix + "t/" + m.signer.token(sh.ID, time.Now()) + "/" + file
}

// visibility caches whether a show exists and whether its media may be
// served without a token, so that media requests do not each read the
// database. Every show event (this node's at once, other nodes' through
// the relay) sets the show's entry from the event's snapshot, so a show
// made private, taken off or deleted stops being served at once here and
// within the relay's delay elsewhere; entries are read again after
// visibilityTTL all the same.
type visibility struct {
	shows *shows.Service
	// gen counts the events: a database read that an event overtook does
	// not overwrite what the event set.
	gen   atomic.Uint64
	mu    sync.RWMutex
	cache map[int64]visEntry
}

type visEntry struct {
	public, exists bool
	at             time.Time
}

// visibilityTTL bounds how long an entry is trusted without an event.
const visibilityTTL = time.Minute

// maxVisibility bounds the entries; past it the cache starts over.
const maxVisibility = 10000

func newVisibility(s *shows.Service) *visibility {
	return &visibility{shows: s, cache: map[int64]visEntry{}}
}

// state reports whether the show exists and is public (not private, not off).
func (v *visibility) state(ctx context.Context, id int64) (exists, public bool, err error) {
	v.mu.RLock()
	e, ok := v.cache[id]
	v.mu.RUnlock()
	if ok && time.Since(e.at) < visibilityTTL {
		return e.exists, e.public, nil
	}
	gen := v.gen.Load()
	sh, err := v.shows.Lookup(ctx, id)
	switch {
	case errors.Is(err, shows.ErrNotFound):
		e = visEntry{at: time.Now()}
	case err != nil && ok:
		// The database does not answer: what it last said serves
		// until it does, so that playback goes on.
		return e.exists, e.public, nil
	case err != nil:
		return false, false, err
	default:
		e = visEntry{exists: true, public: !sh.Private && !sh.Off, at: time.Now()}
	}
	v.mu.Lock()
	if v.gen.Load() == gen {
		v.setLocked(id, e)
	}
	v.mu.Unlock()
	return e.exists, e.public, nil
}

// cached is state from the cache alone, at now: ok is false when the
// show's entry is missing or older than visibilityTTL (state reads it).
func (v *visibility) cached(id int64, now time.Time) (exists, public, ok bool) {
	v.mu.RLock()
	e, ok := v.cache[id]
	v.mu.RUnlock()
	if !ok || now.Sub(e.at) >= visibilityTTL {
		return false, false, false
	}
	return e.exists, e.public, true
}

// event takes the show's state from a show event.
func (v *visibility) event(ev shows.Event) {
	e := visEntry{exists: ev.Type != shows.EventDeleted, at: time.Now()}
	e.public = e.exists && !ev.Show.Private && !ev.Show.Off
	v.mu.Lock()
	v.gen.Add(1)
	v.setLocked(ev.Show.ID, e)
	v.mu.Unlock()
}

func (v *visibility) setLocked(id int64, e visEntry) {
	if _, ok := v.cache[id]; !ok && len(v.cache) >= maxVisibility {
		v.cache = map[int64]visEntry{}
	}
	v.cache[id] = e
}

// servePublic answers /media/shows/:id/:file for public shows.
func (m *Module) servePublic(c *fiber.Ctx) error {
	id, file, err := mediaParams(c)
	if err != nil {
		return err
	}
	exists, public, err := m.vis.state(c.UserContext(), id)
	if err != nil {
		return err
	}
	if !exists || !public {
		return fiber.ErrNotFound
	}
	return m.sendMedia(c, id, file, "public")
}

// serveSigned answers /media/shows/:id/t/:token/:file: any show, with a
// valid token.
func (m *Module) serveSigned(c *fiber.Ctx) error {
	id, file, err := mediaParams(c)
	if err != nil {
		return err
	}
	if !m.signer.valid(id, c.Params("token"), time.Now()) {
		return fiber.NewError(fiber.StatusForbidden, "media link expired or invalid")
	}
	if exists, _, err := m.vis.state(c.UserContext(), id); err != nil {
		return err
	} else if !exists {
		return fiber.ErrNotFound
	}
	return m.sendMedia(c, id, file, "private")
}

func mediaParams(c *fiber.Ctx) (int64, string, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	file := c.Params("file")
	if err != nil || id < 1 || !mediaFile(file) {
		return 0, "", fiber.ErrNotFound
	}
	return id, file, nil
}

// sendMedia sends a media file of the show with the content type and
// cache policy players expect: live playlists are revalidated on every
// poll, segments never change. It answers from, in order: the node that
// ingests the show, when that is another node (the cluster forwards the
// request there, proxy.go); the working file on this node (the node that
// ingests the show, or the store's own directory); the media store (a
// redirect to a presigned URL when ONAIR_STORAGE_PUBLIC_URL is set, except
// for live playlists).
//
// A live playlist request counts its viewer (sessions.go); a live master
// asked with a valid session token lists its playlists with the token.
func (m *Module) sendMedia(c *fiber.Ctx, id int64, file, scope string) (err error) {
	ext := filepath.Ext(file)
	live := ext == ".m3u8" && !isArchivePlaylist(file)
	var who viewer
	if live {
		who = m.viewerOf(c, id)
	}
	// A show another node ingests: its live media come from there (this
	// node's own working files of it, if any, are from an earlier stream;
	// that node adds the token to the master).
	if m.cluster != nil && m.cluster.proxy.forward(c, id) {
		if live {
			m.viewers.saw(id, who, time.Now())
		}
		return nil
	}
	if who.token != "" && isLiveMaster(file) {
		defer func() {
			if err == nil && c.Response().StatusCode() == fiber.StatusOK && c.Method() == fiber.MethodGet {
				c.Response().SetBodyRaw(withSession(c.Response().Body(), who.token))
			}
		}()
	}
	// A delta update (_HLS_skip, dvr.go) of a live playlist.
	var skip bool
	if isLivePlaylist(file) {
		var err error
		if skip, err = parseSkip(c.Query("_HLS_skip")); err != nil {
			return fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
	}
	// LL-HLS: a blocking playlist reload or a hinted part waits here, on
	// the node that ingests the show, until what it asks for exists.
	if err := m.awaitMedia(c, id, file); err != nil {
		return err
	}
	ctype, cache := mediaType(ext), cachePolicy(scope, ext, live)
	if live && !proxied(c) { // the viewer is counted where it asked
		m.viewers.saw(id, who, time.Now())
	}
	// The live edge of a show ingested here is in memory (memcache.go).
	if mf := m.media.get(id, file); mf != nil {
		mediaHeaders(c, ctype, cache)
		if skip {
			mf = mf.deltaOf()
		}
		return sendMemory(c, mf)
	}
	// A part of the live edge that memory could not hold: its bytes are
	// in its segment's file, or still in its growing memory file.
	if loc, mf, ok := m.media.part(id, file); ok {
		mediaHeaders(c, ctype, cache)
		if mf != nil {
			return sendMemory(c, mf)
		}
		return m.sendPart(c, id, loc)
	}
	// The file is opened once and, unless it is a (small, rewritten)
	// playlist, sent as a body stream, which fasthttp hands to
	// sendfile(2): a ~600 KB segment is not copied through a fresh heap
	// buffer per request (bench/live measured 0.3–0.6× nginx that way).
	f, err := os.Open(filepath.Join(m.showDir(id), file))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("live: open %s: %w", file, err)
	}
	var fi os.FileInfo
	if err == nil {
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return fmt.Errorf("live: stat %s: %w", file, err)
		}
		if m.mirror && fi.Size() == 0 && ext == ".ts" {
			// The placeholder of a segment that is in the store only
			// (see restoreDir).
			f.Close()
			f = nil
		}
	} else {
		f = nil
	}
	if f == nil && !m.mirror {
		return fiber.ErrNotFound
	}
	mediaHeaders(c, ctype, cache)
	if f == nil {
		return m.sendStored(c, id, file, live, skip)
	}
	if live {
		defer f.Close()
		data := make([]byte, fi.Size()) // playlists are replaced by rename: the open file is whole
		if _, err := io.ReadFull(f, data); err != nil {
			return fmt.Errorf("live: read %s: %w", file, err)
		}
		return c.Send(playlistBody(data, skip))
	}
	return httprange.Send(c, f, fi.Size(), fi.ModTime(), localETag(fi))
}

// sendPart answers with a part from its range of its segment's file.
func (m *Module) sendPart(c *fiber.Ctx, id int64, loc partLoc) error {
	f, err := os.Open(filepath.Join(m.showDir(id), loc.segment))
	if errors.Is(err, os.ErrNotExist) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("live: open %s: %w", loc.segment, err)
	}
	start, length, send := httprange.Validators(c, loc.etag, loc.lastMod, loc.size)
	if !send {
		f.Close()
		return nil
	}
	if _, err := f.Seek(loc.off+start, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("live: seek %s: %w", loc.segment, err)
	}
	c.Response().SetBodyStream(httprange.FileRange(f, length), int(length)) // sendfile, closed by fasthttp
	return nil
}

// cachePolicy is the Cache-Control of a media file: live playlists are
// revalidated on every poll, archive playlists kept 5 minutes, images 30
// seconds, segments forever. scope is "public" or "private".
func cachePolicy(scope, ext string, live bool) string {
	private := scope == "private"
	switch {
	case live:
		return "no-cache"
	case ext == ".m3u8" && private:
		return "private, max-age=300"
	case ext == ".m3u8":
		return "public, max-age=300"
	case (ext == ".jpg" || ext == ".gif") && private:
		return "private, max-age=30"
	case ext == ".jpg" || ext == ".gif":
		return "public, max-age=30"
	case private:
		return "private, max-age=31536000, immutable"
	}
	return "public, max-age=31536000, immutable"
}

// mediaHeaders sets the headers of every media answer. The keys are
// given in their canonical form (SetCanonical): Set would copy and
// normalize each key on every request, a few percent of a live playlist
// request's CPU (bench/results/2026-11-28-serve.md).
func mediaHeaders(c *fiber.Ctx, ctype, cache string) {
	setMediaHeaders(&c.Response().Header, ctype, cache)
}

// setMediaHeaders is mediaHeaders on a response's header.
func setMediaHeaders(h *fasthttp.ResponseHeader, ctype, cache string) {
	h.SetContentType(ctype)
	h.SetCanonical(keyCacheControl, []byte(cache))
	h.SetCanonical(keyAllowOrigin, valueAnyOrigin)
	h.SetCanonical(keyExposeHeaders, valueExposeHeaders)
}

// The canonical keys and fixed values of mediaHeaders.
var (
	keyCacheControl    = []byte(fiber.HeaderCacheControl)
	keyAllowOrigin     = []byte(fiber.HeaderAccessControlAllowOrigin)
	keyExposeHeaders   = []byte(fiber.HeaderAccessControlExposeHeaders)
	valueAnyOrigin     = []byte("*")
	valueExposeHeaders = []byte("Content-Length, Content-Range, Accept-Ranges")
)

// isArchivePlaylist tells the VOD playlists of an archive (cached for
// minutes) from the live ones (revalidated on every poll).
func isArchivePlaylist(file string) bool {
	switch file {
	case hls.ArchiveAV, hls.ArchiveAudio, hls.ArchiveMasterAV, hls.ArchiveMasterAudio:
		return true
	}
	rung, ok := strings.CutPrefix(file, "archive_")
	return ok && hls.IsRungPlaylist(rung)
}

// preflight answers CORS preflight requests of players on other origins.
func preflight(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	c.Set(fiber.HeaderAccessControlAllowMethods, "GET, HEAD, OPTIONS")
	c.Set(fiber.HeaderAccessControlAllowHeaders, "Range")
	c.Set(fiber.HeaderAccessControlMaxAge, "86400")
	return c.SendStatus(fiber.StatusNoContent)
}
