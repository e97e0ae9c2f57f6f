package restream

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/webhooks"
)

// Limits of a destination.
const (
	MaxName    = 100
	MaxURL     = rtmp.MaxTargetURL
	MaxPerUser = 20
	PageSize   = 20
)

// Mask stands for the hidden part of a stream key.
const Mask = "••••"

// splitKey cuts a destination URL into what may be shown (everything up
// to the last '/' of the path) and the stream key (the rest, query
// included). ok is false when there is no '/' after the host.
func splitKey(raw string) (prefix, key string, ok bool) {
	base := raw
	if q := strings.IndexByte(raw, '?'); q >= 0 {
		base = raw[:q]
	}
	start := strings.Index(base, "://")
	if start < 0 {
		return "", "", false
	}
	i := strings.LastIndexByte(base, '/')
	if i < start+3 || strings.IndexByte(base[start+3:], '/') < 0 {
		return "", "", false
	}
	return raw[:i+1], raw[i+1:], true
}

// hintOf is what the masked form shows of a key: its last four
// characters, for a key long enough that they give little away.
func hintOf(key string) string {
	if utf8.RuneCountInString(key) < 12 {
		return ""
	}
	r := []rune(key)
	return string(r[len(r)-4:])
}

// masked is a destination's URL as the API and the studio show it.
func masked(prefix, hint string) string { return prefix + Mask + hint }

// checkURL is the rule of a destination URL: rtmp:// or rtmps://, a
// host (not this machine nor a private address unless
// ONAIR_WEBHOOK_ALLOW_PRIVATE), an application and a stream key. It
// returns the problem in words, or "".
func checkURL(raw string, allowPrivate bool) string {
	if raw == "" {
		return "is required"
	}
	if len(raw) > MaxURL {
		return fmt.Sprintf("must be at most %d characters", MaxURL)
	}
	if !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "must be valid text without control characters"
	}
	lower := strings.ToLower(raw)
	if !strings.HasPrefix(lower, "rtmp://") && !strings.HasPrefix(lower, "rtmps://") {
		return "must be an rtmp:// or rtmps:// URL"
	}
	t, err := rtmp.ParseTarget(raw)
	switch {
	case errors.Is(err, rtmp.ErrNoKey):
		return "must end with the stream key (rtmp://host/app/KEY)"
	case errors.Is(err, rtmp.ErrNoApp):
		return "must name an application before the stream key (rtmp://host/app/KEY)"
	case err != nil:
		return "must be an rtmp:// or rtmps:// URL with a host, without user:password@ or #fragment"
	}
	if strings.Contains(t.Key, Mask) {
		return "must give the stream key itself, not its masked form"
	}
	if p := webhooks.HostProblem(t.Host, allowPrivate); p != "" {
		return p
	}
	if _, _, ok := splitKey(raw); !ok {
		return "must end with the stream key (rtmp://host/app/KEY)"
	}
	return ""
}
