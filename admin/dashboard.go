package admin

import (
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// dashboard is GET /admin: the cards of every module (app.AdminWidgeter).
func (m *Module) dashboard(c *fiber.Ctx) error {
	var cards []app.AdminWidget
	for _, mod := range m.core.Modules {
		w, ok := mod.(app.AdminWidgeter)
		if !ok {
			continue
		}
		list, err := w.AdminWidgets(c.UserContext())
		if err != nil {
			return err
		}
		cards = append(cards, list...)
	}
	sort.SliceStable(cards, func(i, j int) bool { return cards[i].Order < cards[j].Order })
	return Render(c, dashboardView(cards))
}
