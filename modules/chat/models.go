package chat

import (
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/users"
)

// Message is one chat message of a show, stored exactly as sent.
type Message struct {
	bun.BaseModel `bun:"table:chat_messages,alias:m"`

	ID     int64       `bun:"id,pk,autoincrement"`
	ShowID int64       `bun:"show_id,notnull"`
	UserID int64       `bun:"user_id,notnull"`
	User   *users.User `bun:"rel:belongs-to,join:user_id=id"`
	Body   string      `bun:"body,notnull,type:text"`
	// Position is the offset from the show's start in units of 10 µs, so
	// it renders exactly with five decimals.
	Position  int64      `bun:"position,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	DeletedAt *time.Time `bun:"deleted_at"`
	DeletedBy *int64     `bun:"deleted_by"`
}

// PositionString renders Position as seconds with five decimals.
func (m *Message) PositionString() string {
	return fmt.Sprintf("%d.%05d", m.Position/100000, m.Position%100000)
}

// Ban keeps a user out of one show's chat (ShowID set) or every chat.
type Ban struct {
	bun.BaseModel `bun:"table:chat_bans,alias:b"`

	ID        int64     `bun:"id,pk,autoincrement"`
	UserID    int64     `bun:"user_id,notnull"`
	ShowID    int64     `bun:"show_id,notnull"` // 0: every show
	Reason    string    `bun:"reason,notnull,type:varchar(200)"`
	CreatedBy int64     `bun:"created_by,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// Settings are per-show chat settings set by staff.
type Settings struct {
	bun.BaseModel `bun:"table:chat_settings"`

	ShowID int64 `bun:"show_id,pk"`
	// SlowMode is the least number of seconds between two posts of one
	// user in this show's chat; 0 keeps the default of one per second.
	SlowMode  int       `bun:"slow_mode,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}
