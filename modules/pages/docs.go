package pages

import (
	"github.com/gofiber/fiber/v2"
)

// cspDocs is the policy of /docs. Redoc is a script of our own, but it
// styles itself with <style> elements it writes at run time, so the page
// allows inline styles (never inline scripts); it fetches only the
// document, from this site, and no font or image from anywhere else.
const cspDocs = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; " +
	"form-action 'self'; frame-ancestors 'self'"

// docs is GET /docs: the reference of the v1 API, /v1/openapi.json
// rendered by the vendored Redoc (static/update-redoc.sh). Without
// scripts the page links the document itself.
func (m *Module) docs(c *fiber.Ctx, v *visitor) error {
	c.Set("Content-Security-Policy", cspDocs)
	c.Set(fiber.HeaderXFrameOptions, "SAMEORIGIN")
	l := m.layout(c, v, "API reference", "The OnAir v1 REST API: every endpoint, its parameters and answers.")
	l.BodyClass = "docs"
	return m.render(c, fiber.StatusOK, docsPage(l, m.assets.URL("docs.js"), m.assets.URL("redoc.standalone.js"), "/v1/openapi.json"))
}
