package shows

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// placeholder answers the generated SVG thumbnail of a show that has no
// grabbed frame yet: a colour from the id and a play mark, so image_url
// always works. ?mark=none leaves the play mark out, for the artwork of
// the audio player, where a mark that does nothing would look like the
// button. It reveals nothing about the show, so it needs no visibility
// check.
func placeholder(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fiber.ErrNotFound
	}
	f := fnv.New32a()
	fmt.Fprint(f, "show", id)
	hue := f.Sum32() % 360
	mark := `<circle cx="320" cy="180" r="56" fill="#fff" fill-opacity=".2"/>` +
		`<path d="M300 150v60l52-30z" fill="#fff" fill-opacity=".9"/>`
	if c.Query("mark") == "none" {
		mark = ""
	}
	c.Set(fiber.HeaderContentType, "image/svg+xml")
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.SendString(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 640 360" width="640" height="360">`+
		`<defs><linearGradient id="g" x2="1" y2="1"><stop offset="0" stop-color="hsl(%d,55%%,38%%)"/>`+
		`<stop offset="1" stop-color="hsl(%d,55%%,18%%)"/></linearGradient></defs>`+
		`<rect width="640" height="360" fill="url(#g)"/>%s</svg>`, hue, (hue+40)%360, mark))
}
