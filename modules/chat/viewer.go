package chat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

// Anonymous viewers.
//
// The server issues the onair_viewer cookie: a random UUID and its HMAC
// under the install's secret "chat.viewer" (app.Core.Secret), so every node
// accepts what any node issued, and a value the server did not issue
// (unsigned, wrong signature, malformed) is replaced with a fresh one. The
// cookie's UUID itself is never shown: in a show's room the viewer is
// known by an HMAC of it and the show's id, shaped as a UUID, the same on
// every reconnect to that room and unrelated from one room to the next.

const (
	viewerCookie = "onair_viewer"
	viewerSecret = "chat.viewer"
	// viewerCookieAge is how long a browser keeps its viewer cookie.
	viewerCookieAge = 365 * 24 * time.Hour
	// viewerMACLen is the length of the cookie's signature (16 bytes in
	// unpadded base64url).
	viewerMACLen = 22
	// viewerCookieLen is the length of every cookie the server issues:
	// the UUID, a dot and the signature.
	viewerCookieLen = 36 + 1 + viewerMACLen
)

// viewerKeys sign the cookies and derive the ids shown in the rooms, each
// from the install's secret under its own label.
type viewerKeys struct {
	sign, room []byte
	secure     bool // the public URL is https: the cookie is Secure
}

func newViewerKeys(secret []byte, secure bool) *viewerKeys {
	return &viewerKeys{sign: label(secret, "cookie"), room: label(secret, "room"), secure: secure}
}

func label(secret []byte, name string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(name))
	return h.Sum(nil)
}

func (k *viewerKeys) mac(id string) string {
	h := hmac.New(sha256.New, k.sign)
	h.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// value is the cookie's value for the viewer id.
func (k *viewerKeys) value(id uuid.UUID) string {
	s := id.String()
	return s + "." + k.mac(s)
}

// parse returns the viewer id of a cookie value the server issued; false
// for anything else.
func (k *viewerKeys) parse(v string) (uuid.UUID, bool) {
	if len(v) != viewerCookieLen || v[36] != '.' {
		return uuid.UUID{}, false
	}
	s, sig := v[:36], v[37:]
	id, err := uuid.Parse(s)
	// uuid.Parse also takes upper case: only the form issued is the same
	// value, signed.
	if err != nil || id.String() != s {
		return uuid.UUID{}, false
	}
	if !hmac.Equal([]byte(sig), []byte(k.mac(s))) {
		return uuid.UUID{}, false
	}
	return id, true
}

// roomID is the id the viewer has in the show's room: 16 bytes of an HMAC
// of the cookie's id and the show id, with a version 4 UUID's version and
// variant bits (the documented shape of an anonymous chat user's id).
func (k *viewerKeys) roomID(id uuid.UUID, showID int64) string {
	h := hmac.New(sha256.New, k.room)
	h.Write(id[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(showID))
	h.Write(b[:])
	var out uuid.UUID
	copy(out[:], h.Sum(nil))
	out[6] = out[6]&0x0f | 0x40
	out[8] = out[8]&0x3f | 0x80
	return out.String()
}

// viewer returns the anonymous viewer id of the request's cookie; when it
// has none the server issued, a fresh one is drawn and set as the cookie
// of the response (a page's, or a web socket's upgrade).
func (k *viewerKeys) viewer(c *fiber.Ctx) uuid.UUID {
	if id, ok := k.parse(c.Cookies(viewerCookie)); ok {
		return id
	}
	id := uuid.New()
	c.Cookie(&fiber.Cookie{Name: viewerCookie, Value: k.value(id), Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: k.secure, Expires: time.Now().Add(viewerCookieAge)})
	return id
}

// EnsureViewerCookie gives an anonymous visitor a viewer cookie the server
// issued, unless the request carries one already (pages with a chat call
// it, so the viewer keeps one identity per room across tabs and visits).
func (s *Service) EnsureViewerCookie(c *fiber.Ctx) { s.viewers.viewer(c) }

func secureURL(public string) bool { return strings.HasPrefix(strings.ToLower(public), "https:") }
