package admin

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"

	"github.com/gofiber/fiber/v2"
)

// The console's one stylesheet, embedded in the binary. Its URL carries a
// hash of its content, so browsers may keep it forever.
//
//go:embed assets/admin.css
var css []byte

var cssName = func() string {
	sum := sha256.Sum256(css)
	return "admin." + hex.EncodeToString(sum[:6]) + ".css"
}()

// CSSPath is the stylesheet's URL.
var CSSPath = Prefix + "/assets/" + cssName

func serveCSS(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/css; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(css)
}
