package users

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// avatar answers a generated SVG avatar: a colour from the user id, so every
// user has a working image_url before uploads exist.
func avatar(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, "image/svg+xml")
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.SendString(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="256" height="256">`+
		`<rect width="64" height="64" rx="8" fill="hsl(%d,55%%,45%%)"/>`+
		`<circle cx="32" cy="25" r="11" fill="#fff" fill-opacity=".85"/>`+
		`<path d="M12 56c2-11 10-17 20-17s18 6 20 17z" fill="#fff" fill-opacity=".85"/></svg>`, hue(id)))
}

// cover answers a generated SVG banner in the user's colour.
func cover(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fiber.ErrNotFound
	}
	h := hue(id)
	c.Set(fiber.HeaderContentType, "image/svg+xml")
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.SendString(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1200 300" width="1200" height="300">`+
		`<defs><linearGradient id="g" x2="1" y2="1"><stop offset="0" stop-color="hsl(%d,60%%,35%%)"/>`+
		`<stop offset="1" stop-color="hsl(%d,60%%,20%%)"/></linearGradient></defs>`+
		`<rect width="1200" height="300" fill="url(#g)"/></svg>`, h, (h+40)%360))
}

func hue(id int64) int {
	f := fnv.New32a()
	fmt.Fprint(f, id)
	return int(f.Sum32() % 360)
}
