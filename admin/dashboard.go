package admin

import (
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
)

// dashboard is GET /admin: the cards of every module (app.AdminWidgeter),
// then their charts (app.AdminCharter).
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
	var charts []app.AdminChart
	for _, mod := range m.core.Modules {
		ch, ok := mod.(app.AdminCharter)
		if !ok {
			continue
		}
		list, err := ch.AdminCharts(c.UserContext())
		if err != nil {
			return err
		}
		charts = append(charts, list...)
	}
	sort.SliceStable(charts, func(i, j int) bool { return charts[i].Order < charts[j].Order })
	return Render(c, dashboardView(cards, charts))
}
