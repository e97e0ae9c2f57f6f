package imaging

import (
	"bytes"
	"context"
	"errors"
	"image"
	"testing"
	"time"
)

// FuzzJPEGFrame: the marker walk never panics nor reads past the data,
// and a frame it finds is a start-of-frame marker.
func FuzzJPEGFrame(f *testing.F) {
	f.Add(encoded(f, "jpeg", gradient(16, 16)))
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xC2, 0x00, 0x02})
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xFF, 0xFF, 0xE0, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, ok := JPEGFrame(data)
		if ok && (fr.Marker < 0xC0 || fr.Marker > 0xCF || fr.Marker == 0xC4 || fr.Marker == 0xC8 || fr.Marker == 0xCC) {
			t.Fatalf("frame marker %#x", fr.Marker)
		}
	})
}

// FuzzDecoder: any bytes give a JPEG of at most the target's size or one
// of the Decoder's refusals, never a panic, and never hold the budget.
func FuzzDecoder(f *testing.F) {
	for _, format := range []string{"png", "jpeg", "gif"} {
		f.Add(encoded(f, format, gradient(40, 30)))
	}
	f.Add(testdata(f, "lossy.webp"))
	f.Add(testdata(f, "lossless.webp"))
	d := NewDecoder(8<<20, 10*time.Millisecond)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := d.JPEG(context.Background(), data, 64, 36)
		var tl *TooLargeError
		switch {
		case err == nil:
			cfg, format, err := image.DecodeConfig(bytes.NewReader(out))
			if err != nil || format != "jpeg" || cfg.Width > 64 || cfg.Height > 36 {
				t.Fatalf("answer %s %d×%d (%v)", format, cfg.Width, cfg.Height, err)
			}
		case errors.Is(err, ErrNotImage), errors.As(err, &tl):
		default:
			t.Fatalf("unexpected error %v", err)
		}
		if !d.sem.TryAcquire(d.budget) {
			t.Fatal("the budget was not given back")
		}
		d.sem.Release(d.budget)
	})
}
