package app

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNameProblem(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		ok      bool
	}{
		{"plain", "Deep House", true},
		{"accents and scripts", "Café Noir 東京 Αθήνα", true},
		{"emoji", "Night 🌙", true},
		{"family (ZWJ between emoji)", "👨\u200D👩\u200D👧", true},
		{"rainbow flag (VS16 before the ZWJ)", "🏳\uFE0F\u200D🌈", true},
		{"coder with a skin tone", "👩🏽\u200D💻", true},
		{"heart on fire", "❤\uFE0F\u200D🔥", true},
		{"right-to-left override", "evil\u202Egnp.exe", false},
		{"left-to-right embedding", "a\u202Ab", false},
		{"pop directional formatting", "a\u202Cb", false},
		{"first strong isolate", "a\u2068b", false},
		{"pop directional isolate", "a\u2069b", false},
		{"zero width space", "Ro\u200Bck", false},
		{"zero width non-joiner", "Ro\u200Cck", false},
		{"word joiner", "Ro\u2060ck", false},
		{"byte order mark", "\uFEFFRock", false},
		{"ZWJ between letters", "Ro\u200Dck", false},
		{"ZWJ after an emoji, before a letter", "🌙\u200Da", false},
		{"ZWJ before an emoji, after a letter", "a\u200D🌙", false},
		{"ZWJ at the start", "\u200D🌙", false},
		{"ZWJ at the end", "🌙\u200D", false},
		{"two ZWJs", "🌙\u200D\u200D🌙", false},
		{"skin tone alone before the ZWJ", "\U0001F3FD\u200D🌙", false},
		{"NUL", "a\x00b", false},
		{"not UTF-8", "a\xffb", false},
	} {
		if got := NameProblem(tc.s) == ""; got != tc.ok {
			t.Errorf("%s: NameProblem(%q) = %q, want ok %v", tc.name, tc.s, NameProblem(tc.s), tc.ok)
		}
	}
}

// FuzzNameProblem: no text panics the rule, and what it accepts is UTF-8
// without NUL, bidi controls or invisible characters, with every U+200D
// standing between two emoji.
func FuzzNameProblem(f *testing.F) {
	for _, s := range []string{"Rock", "👨\u200D👩", "a\u202Eb", "\u200D", "🏳\uFE0F\u200D🌈", "\xff", "\U0001F3FB\u200D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if NameProblem(s) != "" {
			return
		}
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\u200B\u200C\u2060\uFEFF\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069") {
			t.Fatalf("accepted %q", s)
		}
		rs := []rune(s)
		for i, r := range rs {
			if r == 0x200D && (i == 0 || i == len(rs)-1 || !isPictographic(rs[i+1])) {
				t.Fatalf("accepted a stray U+200D in %q", s)
			}
		}
	})
}

func isPictographic(r rune) bool {
	return r >= 0x2000 && (r <= 0x3300 || r >= 0x1F000 && r <= 0x1FFFD) || r == 0xA9 || r == 0xAE
}

func TestJSONTextProblem(t *testing.T) {
	for _, tc := range []struct {
		body string
		bad  bool
	}{
		{`{"name": "Rock"}`, false},
		{`{"name": "\u00e9\ud83c\udf19"}`, false}, // é🌙, a pair
		{`{"name": "\uD83C\uDF19"}`, false},
		{`{"name": "a\\ud800"}`, false}, // an escaped backslash, then text
		{`{"name": "\"\ud800"}`, true},
		{`{"name": "\ud800"}`, true},
		{`{"name": "\udc00"}`, true},
		{`{"name": "\ud800x"}`, true},
		{`{"name": "\ud800\u0041"}`, true},
		{`{"name": "\ud800\ud800"}`, true},
		{`{"name": "\udc00\ud800"}`, true},
		{`{"tags": ["ok", "\ud800"]}`, true},
		{`{"\ud800": 1}`, true},
		{"{\"name\": \"a\xffb\"}", true},
		{"{\"name\": \"\xed\xa0\x80\"}", true}, // a surrogate written as raw bytes
		{"{\"name\": \"caf\xc3\xa9\"}", false},
	} {
		if got := jsonTextProblem([]byte(tc.body)); got != tc.bad {
			t.Errorf("jsonTextProblem(%q) = %v, want %v", tc.body, got, tc.bad)
		}
	}
}

// FuzzJSONTextProblem: no body panics the scan, and a JSON object the scan
// passes decodes without any U+FFFD that was not written as such.
func FuzzJSONTextProblem(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, `{"a":"\ud83c\udf19"}`, "{\"a\":\"\xff\"}", `{"a":["\\u", "\\"]}`, `{"a":"\uFFFD"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if jsonTextProblem(b) {
			return
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		want := strings.Count(string(b), "\uFFFD") + strings.Count(strings.ToLower(string(b)), `\ufffd`)
		out, _ := json.Marshal(v)
		if got := strings.Count(string(out), "\uFFFD") + strings.Count(strings.ToLower(string(out)), `\ufffd`); got > want {
			t.Fatalf("%q decoded with %d U+FFFD, %d written", b, got, want)
		}
	})
}
