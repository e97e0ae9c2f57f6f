package rtmp

import (
	"strings"
	"testing"

	"github.com/onair/onair/modules/live/amf0"
)

// FuzzParseTarget: any string either is refused or splits into an
// address with a port, an application and a key that the URL contains,
// and parsing is stable.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"rtmp://a.rtmp.youtube.com/live2/abcd-efgh",
		"rtmps://live-api-s.facebook.com:443/rtmp/FB-123?s_bl=1&a=b",
		"rtmp://127.0.0.1:1935/live/key",
		"rtmp://[::1]:1935/app/inst/key",
		"rtmp://host/app/",
		"rtmp://host/key",
		"rtmp://host:99999/app/key",
		"rtmp://u:p@host/app/key",
		"ftp://host/app/key",
		"rtmp://host/a%2Fb/k%20ey",
		"rtmp:/x",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tg, err := ParseTarget(raw)
		if err != nil {
			return
		}
		if tg.Scheme != "rtmp" && tg.Scheme != "rtmps" || tg.App == "" || tg.Key == "" || tg.Host == "" {
			t.Fatalf("%q parsed to %+v", raw, tg)
		}
		if !strings.Contains(tg.Address, ":") || !strings.HasPrefix(tg.TCURL, tg.Scheme+"://") {
			t.Fatalf("%q parsed to %+v", raw, tg)
		}
		again, err := ParseTarget(raw)
		if err != nil || again != tg {
			t.Fatalf("%q parsed twice differently", raw)
		}
	})
}

// FuzzStatusOf: whatever AMF values a server answers with, reading its
// status neither panics nor keeps a description longer than 200 bytes.
func FuzzStatusOf(f *testing.F) {
	f.Add([]byte{0x05, 0x03, 0x00, 0x04, 'c', 'o', 'd', 'e', 0x02, 0x00, 0x01, 'x', 0x00, 0x00, 0x09})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, _ := decodeForTest(b)
		if st := statusOf(vals, ""); len(st.Description) > 200 {
			t.Fatalf("description of %d bytes", len(st.Description))
		}
	})
}

func decodeForTest(b []byte) ([]any, error) { return amf0.DecodeAll(b) }
