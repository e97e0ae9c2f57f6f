package srt

import (
	"errors"
	"net/url"
	"strings"
)

// MaxStreamID is the longest streamid SRT carries (SRTO_STREAMID).
const MaxStreamID = 512

// Refusals of a streamid.
var (
	// ErrNoKey: the streamid names no stream key.
	ErrNoKey = errors.New("srt: the streamid names no stream key")
	// ErrNotPublish: the caller asks to play (m=request) or for both ways;
	// OnAir only takes publishers.
	ErrNotPublish = errors.New("srt: only publishing (m=publish) is accepted")
	// ErrBadStreamID: the streamid cannot be read.
	ErrBadStreamID = errors.New("srt: malformed streamid")
)

// accessControlPrefix opens a streamid in SRT's access control syntax
// (docs/features/access-control.md of the SRT project).
const accessControlPrefix = "#!::"

// ParseStreamID returns the stream key a caller gives in its streamid:
// the bare key, or the access control form "#!::r=KEY,m=publish", whose
// keys are comma separated key=value pairs. There "r" (the resource) is
// the stream key; "m" (the mode), when given, must be "publish"; "t" (the
// type), when given, must be "stream"; "u" (the user), "s" (the session)
// and any others are ignored. A bare key is printable ASCII without
// spaces, '#', ',' or '%'. The access control form escaped as in a URL
// ("%23%21%3A%3Ar%3D…") is unescaped first.
func ParseStreamID(id string) (string, error) {
	if len(id) > MaxStreamID {
		return "", ErrBadStreamID
	}
	if len(id) >= 6 && strings.EqualFold(id[:6], "%23%21") {
		// The access control form escaped as in a URL, which some
		// encoders pass on undecoded.
		if un, err := url.QueryUnescape(id); err == nil {
			id = un
		}
	}
	rest, ok := strings.CutPrefix(id, accessControlPrefix)
	if !ok {
		if id == "" {
			return "", ErrNoKey
		}
		if !bareKey(id) {
			return "", ErrBadStreamID
		}
		return id, nil
	}
	var key string
	seen := map[string]bool{}
	for pair := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" || seen[k] {
			return "", ErrBadStreamID
		}
		seen[k] = true
		switch k {
		case "r":
			key = v
		case "m":
			if v != "publish" {
				return "", ErrNotPublish
			}
		case "t":
			if v != "stream" {
				return "", ErrBadStreamID
			}
		}
	}
	if key == "" {
		return "", ErrNoKey
	}
	if !bareKey(key) {
		return "", ErrBadStreamID
	}
	return key, nil
}

// bareKey reports whether s may be a stream key.
func bareKey(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '#' || c == ',' || c == '%' {
			return false
		}
	}
	return s != ""
}

// StreamID is the streamid OnAir gives broadcasters for key: the access
// control form, which encoders with a separate "Stream ID" field and
// those that pass it in the URL both understand.
func StreamID(key string) string { return accessControlPrefix + "r=" + key + ",m=publish" }
