package streamcore

import (
	"bytes"
	"testing"
	"time"
)

// TestFLVPicturesKeptApart checks that the pictures of a publication,
// whose bytes share slabs, stay as they were received while the source
// reuses its tag buffer and later pictures arrive: small ones packed
// together, one just under and one over half a slab, a keyframe of its
// own size.
func TestFLVPicturesKeptApart(t *testing.T) {
	var d FLV
	if _, _, err := d.Video(0, avcHeader, time.Time{}); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 100, 9000, 30000, slabSize/2 - 9, slabSize/2 + 1, 200000, 17, slabSize - 9, 5000}
	for range 3 {
		sizes = append(sizes, sizes...)
	}
	tag := make([]byte, 0, 300000) // the source's buffer, reused for every tag
	var units []Unit
	var want [][]byte
	for i, n := range sizes {
		// One NAL unit of n bytes, each byte telling the picture apart.
		tag = append(tag[:0], 0x27, 1, 0, 0, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		for j := range n {
			tag = append(tag, byte(i+j))
		}
		u, ok, err := d.Video(int64(i), tag, time.Time{})
		if err != nil || !ok || len(u.NALUs) != 1 {
			t.Fatalf("picture %d (%d bytes): ok %v, %d NAL units, err %v", i, n, ok, len(u.NALUs), err)
		}
		units = append(units, u)
		want = append(want, bytes.Clone(tag[9:]))
	}
	for i := range tag {
		tag[i] = 0xFF
	}
	// A reader appending to a picture's bytes must not reach the next.
	for _, u := range units {
		_ = append(u.NALUs[0], 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE)
	}
	for i, u := range units {
		if !bytes.Equal(u.NALUs[0], want[i]) {
			t.Fatalf("picture %d (%d bytes) changed after later pictures", i, sizes[i])
		}
	}
}
