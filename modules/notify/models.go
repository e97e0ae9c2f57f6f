package notify

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// Mute turns off the go-live mails of one follow. A new follow deletes
// it: notifications are on for every new follow.
type Mute struct {
	bun.BaseModel `bun:"table:notify_mutes,alias:nm"`

	FollowerID int64       `bun:"follower_id,pk"`
	Follower   *users.User `bun:"rel:belongs-to,join:follower_id=id,on_delete:CASCADE"`
	FollowedID int64       `bun:"followed_id,pk"`
	Followed   *users.User `bun:"rel:belongs-to,join:followed_id=id,on_delete:CASCADE"`
	CreatedAt  time.Time   `bun:"created_at,notnull"`
}

// AccountMute turns off every go-live mail of a user.
type AccountMute struct {
	bun.BaseModel `bun:"table:notify_account_mutes,alias:nam"`

	UserID    int64       `bun:"user_id,pk"`
	User      *users.User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	CreatedAt time.Time   `bun:"created_at,notnull"`
}

// Job is a show that went live and whose followers are to be mailed,
// written in the go-live's transaction. ExpandedAt is set once the job
// is done: its mails queued or, with FailedAt, given up after
// maxAttempts failed expansions. A failed one waits for NextAt (nil: due
// at once) so that it holds up no other show's job.
type Job struct {
	bun.BaseModel `bun:"table:notify_jobs,alias:nj"`

	ShowID     int64       `bun:"show_id,pk"`
	Show       *shows.Show `bun:"rel:belongs-to,join:show_id=id,on_delete:CASCADE"`
	CreatedAt  time.Time   `bun:"created_at,notnull"`
	ExpandedAt *time.Time  `bun:"expanded_at"`
	Attempts   int         `bun:"attempts,notnull,default:0"`
	NextAt     *time.Time  `bun:"next_at"`
	LastError  string      `bun:"last_error,notnull,type:varchar(500),default:''"`
	FailedAt   *time.Time  `bun:"failed_at"`
}

// Mail states.
const (
	StatusPending = "pending"
	StatusSent    = "sent"
	StatusSkipped = "skipped" // the follower turned it off, was suspended, unfollowed, or the show is over
	StatusFailed  = "failed"  // maxAttempts refused
)

// Mail is one go-live mail: one per show and follower (a unique index).
// NextAt is when it is due; a worker claims it by moving NextAt past its
// send, so a node that dies mid-send leaves it due again later.
type Mail struct {
	bun.BaseModel `bun:"table:notify_mails,alias:nml"`

	ID        int64       `bun:"id,pk,autoincrement"`
	ShowID    int64       `bun:"show_id,notnull"`
	Show      *shows.Show `bun:"rel:belongs-to,join:show_id=id,on_delete:CASCADE"`
	UserID    int64       `bun:"user_id,notnull"`
	User      *users.User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	Status    string      `bun:"status,notnull,type:varchar(16)"`
	Attempts  int         `bun:"attempts,notnull,default:0"`
	NextAt    time.Time   `bun:"next_at,notnull"`
	SentAt    *time.Time  `bun:"sent_at"`
	LastError string      `bun:"last_error,notnull,type:varchar(500),default:''"`
	CreatedAt time.Time   `bun:"created_at,notnull"`
}
