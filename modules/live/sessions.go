package live

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/live/hls"
)

// Playback sessions: who a live show's viewers are (viewers.go counts
// them). The player pages put a session token in the master playlist's
// URL (?vs=…, shows.Service.ViewerToken); the master is answered with the
// token on each playlist it lists, so every reload of the media playlists
// names the same session. A player with a valid token is one viewer
// however many share its address; a plain HLS client without one (or
// with a token that does not verify) is one viewer per address and
// User-Agent.
//
// A token is 8 random bytes, the session, and 10 bytes of
// HMAC-SHA256(key, show id, session): 24 characters of base64url. It is
// bound to its show and never expires (a page may stay open for a whole
// show). Anyone may mint valid tokens by loading a player page, so no
// address counts for more than sessionsPerAddress viewers of a show on a
// node: past it, its further sessions and User-Agents count as one more.

const (
	// sessionSecret names the token key among the install's secrets.
	sessionSecret = "live.viewer-sessions"
	// sessionParam is the query parameter that carries the token.
	sessionParam = "vs"
	sessionBytes = 8
	sessionMAC   = 10
	// sessionTokenLen is the length of a token in base64url.
	sessionTokenLen = (sessionBytes + sessionMAC) * 4 / 3
	// sessionsPerAddress caps the viewers one client address (an IPv6
	// /64) counts for, per show and node.
	sessionsPerAddress = 32
	// maxUserAgent is how much of a User-Agent identifies a plain client.
	maxUserAgent = 512
)

// sessions makes and checks playback session tokens.
type sessions struct{ key []byte }

func loadSessions(ctx context.Context, core *app.Core) (*sessions, error) {
	key, err := core.Secret(ctx, sessionSecret)
	if err != nil {
		return nil, fmt.Errorf("live: viewer session key: %w", err)
	}
	return &sessions{key: key}, nil
}

func (s *sessions) mac(show int64, id []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(show))
	h.Write(b[:])
	h.Write(id)
	return h.Sum(nil)[:sessionMAC]
}

// token is a new session of the show.
func (s *sessions) token(show int64) string {
	var b [sessionBytes + sessionMAC]byte
	rand.Read(b[:sessionBytes])
	copy(b[sessionBytes:], s.mac(show, b[:sessionBytes]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// session returns the session a token names, when it is a valid token of
// the show.
func (s *sessions) session(show int64, token string) (string, bool) {
	if len(token) != sessionTokenLen {
		return "", false
	}
	var b [sessionBytes + sessionMAC]byte
	if n, err := base64.RawURLEncoding.Decode(b[:], []byte(token)); err != nil || n != len(b) {
		return "", false
	}
	if !hmac.Equal(b[sessionBytes:], s.mac(show, b[:sessionBytes])) {
		return "", false
	}
	return token[:sessionBytes*4/3+1], true
}

// viewer is who fetched a live playlist: key names them in the count (a
// session, or an address and User-Agent), group is the address group the
// per-address cap applies to, token the valid token the request carried
// ("" for none).
type viewer struct {
	key, group, token string
}

// viewerOf identifies the client of a live playlist request of show.
func (m *Module) viewerOf(c *fiber.Ctx, show int64) viewer {
	return m.viewerFrom(show, c.IP(), c.Query(sessionParam), c.Get(fiber.HeaderUserAgent))
}

// viewerFrom is viewerOf from the client's address, the session token the
// request carried ("" for none) and its User-Agent (only hashed: it may
// be a view of the request's buffer).
func (m *Module) viewerFrom(show int64, ip, tok, ua string) viewer {
	v := viewer{group: addressGroup(ip)}
	if tok != "" && m.sessions != nil {
		if id, ok := m.sessions.session(show, tok); ok {
			v.key, v.token = "s:"+id, tok
			return v
		}
	}
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	h := fnv.New64a()
	h.Write([]byte(ua))
	v.key = "p:" + ip + "|" + strconv.FormatUint(h.Sum64(), 36)
	return v
}

// addressGroup is the address a client counts under for the cap: the
// address itself, or its /64 for IPv6 (one subscriber's prefix).
func addressGroup(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a.Is4() {
		return ip // netip parses only the canonical dotted quad: no reformat
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// isLiveMaster tells the live master playlists, which carry the session
// to the playlists they list.
func isLiveMaster(file string) bool { return file == hls.MasterAV || file == hls.MasterAudio }

// withSession adds ?vs=token to every URI line of a master playlist.
func withSession(playlist []byte, token string) []byte {
	out := make([]byte, 0, len(playlist)+4*(len(token)+4))
	for len(playlist) > 0 {
		line := playlist
		rest := []byte(nil)
		if i := bytes.IndexByte(playlist, '\n'); i >= 0 {
			line, rest = playlist[:i], playlist[i+1:]
		}
		cr := bytes.HasSuffix(line, []byte("\r"))
		uri := bytes.TrimSuffix(line, []byte("\r"))
		out = append(out, uri...)
		if len(uri) > 0 && uri[0] != '#' {
			if bytes.IndexByte(uri, '?') >= 0 {
				out = append(out, '&')
			} else {
				out = append(out, '?')
			}
			out = append(out, sessionParam+"="...)
			out = append(out, token...)
		}
		if cr {
			out = append(out, '\r')
		}
		if rest != nil {
			out = append(out, '\n')
		}
		playlist = rest
	}
	return out
}

// ViewerToken is the shows module's viewer token maker: a new playback
// session of a show, for the player pages.
func (m *Module) ViewerToken(show int64) string { return m.sessions.token(show) }
