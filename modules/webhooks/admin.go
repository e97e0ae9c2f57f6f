package webhooks

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"github.com/onair/onair/admin"
	"github.com/onair/onair/app"
)

var _ app.AdminPager = (*Module)(nil)

// failingRow is one line of the console's Webhooks page.
type failingRow struct {
	Webhook
	Pending int `bun:"pending"`
}

// AdminPages: the console's Webhooks page lists the webhooks that are
// failing (no success since failing_since) or that the system disabled,
// most recently failing first, with their owner and queued deliveries.
func (m *Module) AdminPages() []app.AdminPage {
	return []app.AdminPage{{Path: "/webhooks", Title: "Webhooks", Order: 70, Object: "webhooks", Action: "console",
		Mount: func(r fiber.Router) { r.Get("/", m.failingPage) }}}
}

// failingPage is GET /admin/webhooks.
func (m *Module) failingPage(c *fiber.Ctx) error {
	var rows []failingRow
	err := m.db.NewSelect().Model((*Webhook)(nil)).ColumnExpr("w.*").
		ColumnExpr("(SELECT COUNT(*) FROM webhook_deliveries AS d WHERE d.webhook_id = w.id AND d.status = ?) AS pending", StatusPending).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("w.failing_since IS NOT NULL").WhereOr("w.disabled_reason <> ''")
		}).
		OrderExpr("w.failing_since DESC, w.id DESC").Limit(200).Scan(c.UserContext(), &rows)
	if err != nil {
		return fmt.Errorf("webhooks: console list: %w", err)
	}
	return admin.Render(c, failingView(rows))
}
