package webhooks

import (
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/users"
)

// Webhook is an endpoint a user registered to receive events.
type Webhook struct {
	bun.BaseModel `bun:"table:webhooks,alias:w"`

	ID          int64       `bun:"id,pk,autoincrement"`
	UserID      int64       `bun:"user_id,notnull"`
	User        *users.User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	URL         string      `bun:"url,notnull,type:varchar(2000)"`
	Description string      `bun:"description,notnull,type:varchar(500)"`
	// Events is the subscribed event names, comma-separated.
	Events string `bun:"events,notnull,type:varchar(1000)"`
	// Scope is "own" (the user's shows) or "all" (every show; staff).
	Scope  string `bun:"scope,notnull,type:varchar(8)"`
	Active bool   `bun:"active,notnull"`
	// DisabledReason says why the system disabled the webhook (empty when
	// the user did, or when it is active).
	DisabledReason string `bun:"disabled_reason,notnull,type:varchar(500)"`
	// Secret signs every delivery; OldSecret signs beside it until
	// OldSecretUntil after a rotation.
	Secret         string     `bun:"secret,notnull,type:varchar(100)"`
	OldSecret      string     `bun:"old_secret,notnull,type:varchar(100)"`
	OldSecretUntil *time.Time `bun:"old_secret_until"`
	// FailingSince is the first failed attempt since the last success.
	FailingSince *time.Time `bun:"failing_since"`
	// BusyUntil is the lease of the node sending one of its deliveries
	// (at most one at a time per webhook); BusyBy names the node.
	BusyUntil *time.Time `bun:"busy_until"`
	BusyBy    string     `bun:"busy_by,notnull,type:varchar(40)"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	UpdatedAt time.Time  `bun:"updated_at,notnull"`
}

// EventList is Events as a list.
func (w *Webhook) EventList() []string {
	if w.Events == "" {
		return []string{}
	}
	return strings.Split(w.Events, ",")
}

// Wants tells whether the webhook subscribed to the event type.
func (w *Webhook) Wants(typ string) bool {
	for _, e := range w.EventList() {
		if e == typ {
			return true
		}
	}
	return false
}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Delivery is one event to send to one webhook: written in the transaction
// of the change that caused it, then sent (and retried) by the workers.
// Payload is the exact body, fixed when the event happened, so every
// attempt sends the same bytes under the same webhook-id (EventID).
type Delivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries,alias:d"`

	ID int64 `bun:"id,pk,autoincrement"`
	// WebhookID has no foreign key on purpose: the key's check would take
	// a shared lock on the webhook inside every change that enqueues,
	// against the workers' exclusive one (a deadlock on MySQL). Deleting a
	// webhook deletes its deliveries; Purge removes any left behind.
	WebhookID int64  `bun:"webhook_id,notnull"`
	EventID   string `bun:"event_id,notnull,type:varchar(40)"`
	Type      string `bun:"type,notnull,type:varchar(40)"`
	// ShowID orders the deliveries of one show (0: not about a show).
	ShowID  int64  `bun:"show_id,notnull"`
	Payload string `bun:"payload,notnull,type:mediumtext"`
	Status  string `bun:"status,notnull,type:varchar(16)"`
	// Attempts made so far; the last one's outcome is copied here.
	Attempts      int        `bun:"attempts,notnull"`
	NextAttemptAt *time.Time `bun:"next_attempt_at"`
	StatusCode    *int       `bun:"status_code"`
	DurationMS    *int       `bun:"duration_ms"`
	Error         string     `bun:"error,notnull,type:varchar(500)"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	UpdatedAt     time.Time  `bun:"updated_at,notnull"`

	AttemptList []Attempt `bun:"rel:has-many,join:id=delivery_id"`
}

// Attempt is one try at sending a delivery.
type Attempt struct {
	bun.BaseModel `bun:"table:webhook_attempts,alias:a"`

	ID            int64      `bun:"id,pk,autoincrement"`
	DeliveryID    int64      `bun:"delivery_id,notnull"`
	Delivery      *Delivery  `bun:"rel:belongs-to,join:delivery_id=id,on_delete:CASCADE"`
	WebhookID     int64      `bun:"webhook_id,notnull"`
	Number        int        `bun:"number,notnull"`
	StatusCode    *int       `bun:"status_code"`
	DurationMS    int        `bun:"duration_ms,notnull"`
	Error         string     `bun:"error,notnull,type:varchar(500)"`
	Response      string     `bun:"response,notnull,type:text"`
	NextAttemptAt *time.Time `bun:"next_attempt_at"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
}
