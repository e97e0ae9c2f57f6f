// Package imaging turns uploaded images (JPEG, PNG, GIF, WebP) into plain
// JPEGs of a known shape, within a memory budget.
//
// A few hundred kilobytes of PNG can decode to hundreds of megabytes of
// pixels (6320×6320 at 16 bits a channel is 320 MB), and the decoders of
// the standard library allocate the whole bitmap at once. So before
// anything is decoded, the Decoder reads the header (image.DecodeConfig),
// works out what the decode and the scaling will hold (Cost), refuses an
// image that alone would exceed the budget, and otherwise takes that many
// bytes of a weighted semaphore shared by every decode of the process: the
// pixels in flight stay under the budget (ONAIR_IMAGE_DECODE_MB), and a
// decode that cannot get its share within the Decoder's wait is refused
// with ErrBusy (the API's 503 with Retry-After).
package imaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // decoders of the accepted uploads
	"image/jpeg"
	_ "image/png"
	"net/http"
	"time"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp"
	"golang.org/x/sync/semaphore"
)

// MaxPixels is the most pixels an accepted image may have, whatever the
// budget.
const MaxPixels = 40_000_000

// Errors of Decoder.JPEG; each becomes a 4xx or 503 of its caller.
var (
	// ErrNotImage: not a JPEG, PNG, GIF or WebP the decoders read.
	ErrNotImage = errors.New("imaging: not a JPEG, PNG, GIF or WebP image")
	// ErrBusy: other decodes hold the budget for longer than the wait.
	ErrBusy = errors.New("imaging: the image decode budget is in use")
)

// TooLargeError refuses an image whose pixels exceed MaxPixels, or whose
// decode alone would exceed the whole budget.
type TooLargeError struct {
	Width, Height int
	Cost, Budget  int64 // bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("imaging: a %d×%d image needs %d MB to decode, more than the %d MB allowed",
		e.Width, e.Height, e.Cost>>20, e.Budget>>20)
}

// Decoder decodes images within a budget of bytes shared by all its
// callers. Make one per process (the users module holds it; shows and
// the pages reach it through users.Service) so the budget is the
// process's.
type Decoder struct {
	budget int64
	wait   time.Duration
	sem    *semaphore.Weighted
}

// NewDecoder makes a Decoder whose decodes hold at most budget bytes
// together, and where a decode waits at most wait for its share.
func NewDecoder(budget int64, wait time.Duration) *Decoder {
	return &Decoder{budget: budget, wait: wait, sem: semaphore.NewWeighted(budget)}
}

// Budget is the bytes the decodes may hold together.
func (d *Decoder) Budget() int64 { return d.budget }

// Wait is how long a decode waits for its share of the budget.
func (d *Decoder) Wait() time.Duration { return d.wait }

// accepted are the sniffed types of the accepted uploads.
var accepted = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// JPEG decodes data, crops it to the aspect of width×height around its
// centre, scales it down (never up) to fit and encodes it as a JPEG on
// white (JPEG has no alpha). Refusals: ErrNotImage, *TooLargeError,
// ErrBusy, or ctx's error when the request ends while waiting.
func (d *Decoder) JPEG(ctx context.Context, data []byte, width, height int) ([]byte, error) {
	if len(data) == 0 || !accepted[http.DetectContentType(data)] {
		return nil, ErrNotImage
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width < 1 || cfg.Height < 1 {
		return nil, ErrNotImage
	}
	cost := Cost(cfg, format, data) + scaleCost(width, height)
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels || cost > d.budget {
		return nil, &TooLargeError{Width: cfg.Width, Height: cfg.Height, Cost: cost, Budget: d.budget}
	}
	wctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	if err := d.sem.Acquire(wctx, cost); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrBusy
	}
	defer d.sem.Release(cost)
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, ErrNotImage
	}
	return reencode(src, width, height)
}

// Cost is the bytes decoding an image of this header holds at its peak:
// the bitmap in the decoder's colour model, and what the format's decoder
// keeps beside it (a progressive JPEG's coefficients, an interlaced PNG's
// passes, a lossless WebP's transformed copy).
func Cost(cfg image.Config, format string, data []byte) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	per := bytesPerPixel(cfg.ColorModel)
	switch format {
	case "jpeg":
		if sof, ok := JPEGFrame(data); !ok || sof.Progressive {
			// Every component's coefficients, 64 int32 a block of 64.
			per += 4 * int64(jpegComponents(cfg.ColorModel))
		}
		if cfg.ColorModel == color.CMYKModel {
			per += 4 // decoded as YCbCr and black, then converted
		}
	case "png":
		if len(data) > 28 && data[28] != 0 { // IHDR's interlace method
			per *= 2
		}
	case "webp":
		if cfg.ColorModel == color.NRGBAModel {
			per *= 2 // VP8L's transforms copy the pixels
		} else {
			per++ // a lossy image's alpha plane
		}
	}
	return px * per
}

// bytesPerPixel is what the decoders' image type of model holds a pixel
// in; unknown models are counted as the largest.
func bytesPerPixel(model color.Model) int64 {
	if _, ok := model.(color.Palette); ok {
		return 1
	}
	switch model {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3 // 4:4:4 at most; subsampled images hold less
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	}
	return 8
}

func jpegComponents(model color.Model) int {
	switch model {
	case color.GrayModel:
		return 1
	case color.CMYKModel:
		return 4
	}
	return 3
}

// The scaling (reencode) holds an intermediate image of at most twice the
// target's sides (4 bytes a pixel), the Catmull-Rom scaler's buffer of the
// target's width by the intermediate's height (32 bytes each) and the
// target (4 bytes a pixel): 84 bytes per target pixel.
func scaleCost(width, height int) int64 {
	return 84 * int64(width) * int64(height)
}

// reencode crops src to width:height around its centre, scales it down
// to fit and encodes it as a JPEG. A large source is first reduced to
// twice the target with a cheap bilinear pass, so that the Catmull-Rom
// pass (whose buffer is the target's width by the source's height) works
// on a small image; src is not used after that pass, so the collector may
// take the decoded bitmap back while the rest runs.
func reencode(src image.Image, width, height int) ([]byte, error) {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	// The largest centred rectangle of the aspect.
	cw, ch := w, int(int64(w)*int64(height)/int64(width))
	if ch > h {
		cw, ch = int(int64(h)*int64(width)/int64(height)), h
	}
	cw, ch = max(cw, 1), max(ch, 1)
	crop := image.Rect(b.Min.X+(w-cw)/2, b.Min.Y+(h-ch)/2, b.Min.X+(w-cw)/2+cw, b.Min.Y+(h-ch)/2+ch)
	tw, th := width, height
	if cw < tw {
		tw, th = cw, ch
	}
	var from image.Image = src
	if cw > 2*tw {
		pre := image.NewRGBA(image.Rect(0, 0, 2*tw, max(2*th, 1)))
		draw.ApproxBiLinear.Scale(pre, pre.Bounds(), src, crop, draw.Src, nil)
		from, crop = pre, pre.Bounds()
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.CatmullRom.Scale(dst, dst.Bounds(), from, crop, draw.Over, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85}); err != nil {
		return nil, fmt.Errorf("imaging: encode: %w", err)
	}
	return buf.Bytes(), nil
}
