package live

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// A segment evicted while a request sends it stays readable until that
// request is done; the memory file has the bytes and validators of the
// file it was made from.
func TestMediaCacheSegmentOutlivesEviction(t *testing.T) {
	mod := time.Unix(1700000000, 5)
	data := bytes.Repeat([]byte("0123456789"), 1000)
	mc := newMediaCache(1<<20, 1<<20)
	f := mc.start(7)
	f.Put("seg-000000.ts", data, mod)
	m := mc.get(7, "seg-000000.ts")
	if m == nil || m.size != int64(len(data)) || m.etag != fileETag(mod, int64(len(data))) {
		t.Fatalf("got %+v", m)
	}
	mc.drop(7) // evicted while "sending"
	if m.shm == nil {
		t.Fatal("a segment is not in a memory file")
	}
	body := m.shm.body(nil, 10, int64(len(data))-20)
	got, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(got, data[10:len(data)-10]) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	body.Close()
	body.Close() // once only
	if n := m.shm.refs.Load(); n != 0 {
		t.Fatalf("%d references left", n)
	}
}
