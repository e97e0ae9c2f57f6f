package restream

import (
	"strings"
	"testing"
)

// FuzzDestinationURL: a URL the rule accepts splits into a prefix and a
// key that make it up again, and its masked form never holds the key.
func FuzzDestinationURL(f *testing.F) {
	for _, s := range []string{
		"rtmp://a.rtmp.youtube.com/live2/abcd-efgh-ijkl-mnop",
		"rtmps://live.twitch.tv:443/app/live_123?bandwidthtest=true",
		"rtmp://example.com/a/b/c/key/with?query=a/b",
		"rtmp://example.com/live/",
		"rtmp://0x7f000001/live/key",
		"rtmp://example.com/live/••••abcd",
		"RTMP://EXAMPLE.COM/Live/K",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if checkURL(raw, false) != "" {
			return
		}
		prefix, key, ok := splitKey(raw)
		if !ok || prefix+key != raw || key == "" {
			t.Fatalf("%q split into %q + %q (%v)", raw, prefix, key, ok)
		}
		m := masked(prefix, hintOf(key))
		if len(key) > 4 && strings.Contains(m[len(prefix):], key) {
			t.Fatalf("%q masked as %q", raw, m)
		}
	})
}
