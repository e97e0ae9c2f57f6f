package chat

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// The cookie's value is accepted exactly as issued, under the key it was
// issued with; every change of it is refused.
func TestViewerCookieValue(t *testing.T) {
	k := newViewerKeys([]byte("0123456789abcdef0123456789abcdef"), false)
	other := newViewerKeys([]byte("another install's secret, 32 b.."), false)
	id := uuid.New()
	v := k.value(id)
	if got, ok := k.parse(v); !ok || got != id {
		t.Fatalf("the issued value %q parses as %v %v", v, got, ok)
	}
	flip := []byte(v)
	flip[len(flip)-1] ^= 1
	for name, bad := range map[string]string{
		"another install": other.value(id),
		"bare id":         id.String(),
		"upper case":      strings.ToUpper(v[:36]) + v[36:],
		"flipped bit":     string(flip),
		"extra byte":      v + "A",
		"no dot":          strings.Replace(v, ".", "_", 1),
		"empty":           "",
	} {
		if _, ok := k.parse(bad); ok {
			t.Errorf("%s: %q accepted", name, bad)
		}
	}
	a, b := k.roomID(id, 1), k.roomID(id, 2)
	if a == b || a != k.roomID(id, 1) || a == id.String() {
		t.Errorf("room ids %s (show 1), %s (show 2) of %s", a, b, id)
	}
	if u, err := uuid.Parse(a); err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
		t.Errorf("room id %s is not shaped as a version 4 UUID", a)
	}
}

// FuzzViewerCookie: parse takes any bytes without panicking, and accepts
// only a value it could have issued itself (value of the id it returns).
func FuzzViewerCookie(f *testing.F) {
	k := newViewerKeys([]byte("0123456789abcdef0123456789abcdef"), false)
	f.Add(k.value(uuid.New()))
	f.Add(uuid.NewString())
	f.Add(uuid.NewString() + ".AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		id, ok := k.parse(v)
		if ok && k.value(id) != v {
			t.Fatalf("%q accepted as %s, which is issued as %q", v, id, k.value(id))
		}
	})
}
