package live

import (
	"strings"
	"testing"
	"time"
)

// TestSessionTokens: a token names one session of one show; another
// show's token, a changed character, a truncated or padded token, or one
// signed with another key names none.
func TestSessionTokens(t *testing.T) {
	s := &sessions{key: []byte("0123456789abcdef0123456789abcdef")}
	a, b := s.token(7), s.token(7)
	if len(a) != sessionTokenLen || a == b {
		t.Fatalf("tokens %q and %q: want two of %d characters", a, b, sessionTokenLen)
	}
	idA, okA := s.session(7, a)
	idB, okB := s.session(7, b)
	if !okA || !okB || idA == idB {
		t.Fatalf("sessions %q %v, %q %v: want two valid, distinct", idA, okA, idB, okB)
	}
	if again, _ := s.session(7, a); again != idA {
		t.Errorf("the same token names %q then %q", idA, again)
	}
	flip := []byte(a)
	flip[len(flip)-1] ^= 1
	other := &sessions{key: []byte("another key of thirty-two bytes!")}
	for name, tok := range map[string]string{
		"another show": a, "changed": string(flip), "truncated": a[:len(a)-1], "padded": a + "A",
		"empty": "", "not base64": strings.Repeat("*", sessionTokenLen), "another key": other.token(7),
	} {
		show := int64(7)
		if name == "another show" {
			show = 8
		}
		if id, ok := s.session(show, tok); ok {
			t.Errorf("%s token %q is valid (session %q)", name, tok, id)
		}
	}
}

// TestWithSession: the token goes on each URI line of a master, after an
// existing query with &, and never on a tag or a blank line.
func TestWithSession(t *testing.T) {
	in := "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nindex.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\r\naudio.m3u8?x=1\r\n\nlast.m3u8"
	want := "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nindex.m3u8?vs=T\n#EXT-X-STREAM-INF:BANDWIDTH=2\r\naudio.m3u8?x=1&vs=T\r\n\nlast.m3u8?vs=T"
	if got := string(withSession([]byte(in), "T")); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestViewerCap: each session counts until an address has
// sessionsPerAddress of them; the rest of that address count as one more,
// while another address counts on; all leave after the window.
func TestViewerCap(t *testing.T) {
	v := newViewers(viewerWindow)
	now := time.Now()
	for i := range sessionsPerAddress + 20 {
		v.saw(1, viewer{key: "s:" + strings.Repeat("x", i+1), group: "10.0.0.1"}, now)
	}
	if n := v.count(1, now); n != sessionsPerAddress+1 {
		t.Errorf("one address with %d sessions counts %d, want %d", sessionsPerAddress+20, n, sessionsPerAddress+1)
	}
	v.saw(1, viewer{key: "p:10.0.0.2|ua", group: "10.0.0.2"}, now)
	if n := v.count(1, now); n != sessionsPerAddress+2 {
		t.Errorf("another address does not count: %d", n)
	}
	if n := v.count(1, now.Add(viewerWindow+time.Second)); n != 0 {
		t.Errorf("%d viewers after the window", n)
	}
	// The cap's tally left with them: the address counts afresh.
	later := now.Add(2 * viewerWindow)
	for i := range 3 {
		v.saw(1, viewer{key: "s:" + strings.Repeat("y", i+1), group: "10.0.0.1"}, later)
	}
	if n := v.count(1, later); n != 3 {
		t.Errorf("3 new sessions count %d", n)
	}
}

// TestAddressGroup: an IPv6 client is capped by its /64.
func TestAddressGroup(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7": "192.0.2.7", "::ffff:192.0.2.7": "192.0.2.7",
		"2001:db8:1:2:aaaa::1": "2001:db8:1:2::/64", "2001:db8:1:2:bbbb::9": "2001:db8:1:2::/64", "junk": "junk",
		// Not canonical IPv4: left as they are.
		"0.0.0.0": "0.0.0.0", "255.255.255.255": "255.255.255.255", "256.1.1.1": "256.1.1.1",
		"01.2.3.4": "01.2.3.4", "1.2.3": "1.2.3", "1.2.3.4.5": "1.2.3.4.5", "1..2.3": "1..2.3", "1.2.3.": "1.2.3.", "": "",
	} {
		if got := addressGroup(in); got != want {
			t.Errorf("addressGroup(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSessionToken: any query value is a valid token of the show or none,
// never a panic; a master rewritten with any token keeps its tag lines.
func FuzzSessionToken(f *testing.F) {
	s := &sessions{key: []byte("0123456789abcdef0123456789abcdef")}
	for _, seed := range []string{s.token(1), "", "AAAAAAAAAAAAAAAAAAAAAAAA", "%%%", strings.Repeat("-", 24), "\x00\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if id, ok := s.session(1, tok); ok && (len(id) != 11 || !strings.HasPrefix(tok, id)) {
			t.Fatalf("token %q names session %q", tok, id)
		}
		out := string(withSession([]byte("#EXTM3U\n"+tok+"\n#TAG\n"), "T"))
		if !strings.HasPrefix(out, "#EXTM3U\n") || !strings.HasSuffix(out, "\n#TAG\n") {
			t.Fatalf("rewritten master %q", out)
		}
	})
}
