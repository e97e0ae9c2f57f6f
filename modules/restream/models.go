package restream

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/users"
)

// Destination is where a user's live shows are restreamed. The URL is
// kept without its stream key (Prefix: everything up to the last '/');
// the key is encrypted (Key, crypt.go), and Hint keeps its last
// characters for the masked form.
type Destination struct {
	bun.BaseModel `bun:"table:restream_destinations,alias:rd"`

	ID        int64       `bun:"id,pk,autoincrement"`
	UserID    int64       `bun:"user_id,notnull"`
	User      *users.User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	Name      string      `bun:"name,notnull,type:varchar(400)"`
	Prefix    string      `bun:"url_prefix,notnull,type:varchar(2000)"`
	Key       string      `bun:"key_sealed,notnull,type:varchar(4000)"`
	Hint      string      `bun:"key_hint,notnull,type:varchar(16)"`
	Enabled   bool        `bun:"enabled,notnull"`
	CreatedAt time.Time   `bun:"created_at,notnull"`
	UpdatedAt time.Time   `bun:"updated_at,notnull"`
}
