package imaging

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"testing"
	"time"
)

func encoded(t testing.TB, format string, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// gradient is a w×h image with something to scale.
func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	return img
}

// TestEveryFormat: each accepted format comes out as a JPEG of the
// target's aspect, never larger than asked and never scaled up.
func TestEveryFormat(t *testing.T) {
	t.Parallel()
	d := NewDecoder(64<<20, time.Second)
	src := gradient(400, 300)
	for _, tc := range []struct {
		name       string
		data       []byte
		w, h       int
		wantW, wdH int
	}{
		{"png", encoded(t, "png", src), 160, 90, 160, 90},
		{"jpeg", encoded(t, "jpeg", src), 100, 100, 100, 100},
		{"gif", encoded(t, "gif", src), 200, 50, 200, 50},
		{"lossy webp", testdata(t, "lossy.webp"), 512, 512, 64, 64},
		{"lossless webp", testdata(t, "lossless.webp"), 32, 18, 32, 18},
		{"reduced in two passes", encoded(t, "png", gradient(2000, 1000)), 160, 90, 160, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := d.JPEG(context.Background(), tc.data, tc.w, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(out))
			if err != nil || format != "jpeg" || cfg.Width != tc.wantW || cfg.Height != tc.wdH {
				t.Fatalf("got %s %d×%d (%v), want jpeg %d×%d", format, cfg.Width, cfg.Height, err, tc.wantW, tc.wdH)
			}
		})
	}
}

// TestCost: the decoded size is read from the header, by colour model.
func TestCost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		img  image.Image
		fmt  string
		want int64
	}{
		{"16-bit RGBA PNG", image.NewNRGBA64(image.Rect(0, 0, 100, 10)), "png", 8 * 1000},
		{"8-bit RGBA PNG", image.NewNRGBA(image.Rect(0, 0, 100, 10)), "png", 4 * 1000},
		{"grey PNG", image.NewGray(image.Rect(0, 0, 100, 10)), "png", 1000},
		{"paletted GIF", image.NewPaletted(image.Rect(0, 0, 100, 10), color.Palette{color.Black, color.White}), "gif", 1000},
		{"baseline colour JPEG", image.NewRGBA(image.Rect(0, 0, 100, 10)), "jpeg", 3 * 1000},
	} {
		data := encoded(t, tc.fmt, tc.img)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if got := Cost(cfg, format, data); got != tc.want {
			t.Errorf("%s: cost %d, want %d", tc.name, got, tc.want)
		}
	}
	// A progressive JPEG holds its coefficients too (SOF0 made SOF2:
	// only the header is read).
	data := encoded(t, "jpeg", image.NewRGBA(image.Rect(0, 0, 100, 10)))
	if i := bytes.Index(data, []byte{0xFF, 0xC0}); i > 0 {
		data[i+1] = 0xC2
	}
	if f, ok := JPEGFrame(data); !ok || !f.Progressive {
		t.Fatalf("JPEGFrame of a SOF2 image: %+v %v", f, ok)
	}
	cfg, format, _ := image.DecodeConfig(bytes.NewReader(data))
	if got := Cost(cfg, format, data); got != (3+12)*1000 {
		t.Errorf("progressive JPEG: cost %d, want %d", got, 15*1000)
	}
}

// TestBudget: an image whose decode alone exceeds the budget is refused
// from its header, in no time; one that fits waits for the budget while
// others hold it, and gives up with ErrBusy after the wait.
func TestBudget(t *testing.T) {
	t.Parallel()
	bomb := encoded(t, "png", image.NewNRGBA64(image.Rect(0, 0, 2500, 2500))) // 50 MB decoded
	small := encoded(t, "png", gradient(64, 64))
	d := NewDecoder(32<<20, 200*time.Millisecond)

	start := time.Now()
	_, err := d.JPEG(context.Background(), bomb, 512, 512)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Cost < 50_000_000 || tl.Budget != 32<<20 {
		t.Fatalf("bomb: %v, want a TooLargeError of its 50 MB", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the refusal took %s: was it decoded?", took)
	}

	if err := d.sem.Acquire(context.Background(), d.budget); err != nil {
		t.Fatal(err)
	}
	if _, err := d.JPEG(context.Background(), small, 32, 32); !errors.Is(err, ErrBusy) {
		t.Fatalf("while the budget is held: %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.JPEG(ctx, small, 32, 32); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended request: %v, want its context's error", err)
	}
	d.sem.Release(d.budget)
	if _, err := d.JPEG(context.Background(), small, 32, 32); err != nil {
		t.Fatalf("once released: %v", err)
	}
	if !d.sem.TryAcquire(d.budget) {
		t.Fatal("a decode kept its share of the budget")
	}
}

// TestNotImages: what is not an accepted image is ErrNotImage.
func TestNotImages(t *testing.T) {
	t.Parallel()
	d := NewDecoder(64<<20, time.Second)
	png := encoded(t, "png", gradient(64, 64))
	for name, data := range map[string][]byte{
		"empty":     nil,
		"text":      []byte("hello, this is not an image"),
		"truncated": png[:len(png)/2],
		"svg":       []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`),
	} {
		if _, err := d.JPEG(context.Background(), data, 32, 32); !errors.Is(err, ErrNotImage) {
			t.Errorf("%s: %v, want ErrNotImage", name, err)
		}
	}
}
