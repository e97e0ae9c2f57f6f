package podcast

import (
	"bytes"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// CoverSize is the side of the channel's artwork: Apple asks for a
// square JPEG or PNG of 1400 to 3000 pixels.
const CoverSize = 1400

// covers keeps the rendered covers (a few KB each; one per hue).
var covers sync.Map // uint32 hue → []byte

// cover is GET /podcasts/:id/cover.png: the feed's square artwork, a
// gradient in a colour of the user's own (the hue the user's placeholder
// images use comes from the id too).
func (m *Module) cover(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return app.NotFound("cover")
	}
	f := fnv.New32a()
	f.Write([]byte("podcast" + strconv.FormatInt(id, 10)))
	hue := f.Sum32() % 360
	data, ok := covers.Load(hue)
	if !ok {
		data, err = renderCover(float64(hue))
		if err != nil {
			return err
		}
		covers.Store(hue, data)
	}
	c.Set(fiber.HeaderContentType, "image/png")
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.Send(data.([]byte))
}

// renderCover draws a diagonal two-colour gradient of hue.
func renderCover(hue float64) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, CoverSize, CoverSize))
	from, to := hsl(hue, 0.55, 0.38), hsl(hue+40, 0.55, 0.18)
	for y := range CoverSize {
		for x := range CoverSize {
			t := float64(x+y) / float64(2*CoverSize-2)
			img.Set(x, y, color.RGBA{lerp(from.R, to.R, t), lerp(from.G, to.G, t), lerp(from.B, to.B, t), 255})
		}
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func lerp(a, b uint8, t float64) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*t + 0.5) }

// hsl converts a colour from HSL (hue in degrees) to RGB.
func hsl(h, s, l float64) color.RGBA {
	for h >= 360 {
		h -= 360
	}
	c := (1 - abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - abs(mod2(hp)-1))
	var r, g, b float64
	switch {
	case hp < 1:
		r, g = c, x
	case hp < 2:
		r, g = x, c
	case hp < 3:
		g, b = c, x
	case hp < 4:
		g, b = x, c
	case hp < 5:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	return color.RGBA{uint8((r + m) * 255), uint8((g + m) * 255), uint8((b + m) * 255), 255}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func mod2(v float64) float64 {
	for v >= 2 {
		v -= 2
	}
	return v
}
