package users

import (
	"time"

	"github.com/uptrace/bun"
)

// User is a person on OnAir: listener, broadcaster or staff.
type User struct {
	bun.BaseModel `bun:"table:users,alias:u"`

	ID             int64   `bun:"id,pk,autoincrement"`
	Slug           string  `bun:"slug,notnull,unique,type:varchar(120)"`
	Name           string  `bun:"name,notnull,type:varchar(100)"`
	Email          string  `bun:"email,notnull,unique,type:varchar(191)"`
	PasswordHash   string  `bun:"password_hash,notnull,type:varchar(100)"`
	Location       *string `bun:"location,type:varchar(100)"`
	Website        *string `bun:"website,type:varchar(200)"`
	AvatarKey      *string `bun:"avatar_key,type:varchar(200)"` // store key of the uploaded avatar
	CoverKey       *string `bun:"cover_key,type:varchar(200)"`
	Description    *string `bun:"description,type:text"`
	DJ             bool    `bun:"dj,notnull,default:false"`
	Producer       bool    `bun:"producer,notnull,default:false"`
	Featured       bool    `bun:"featured,notnull,default:false"`
	Radio          bool    `bun:"radio,notnull,default:false"`
	RadioRequested bool    `bun:"radio_requested,notnull,default:false"`
	Role           string  `bun:"role,notnull,type:varchar(20),default:''"`
	FollowersCount int     `bun:"followers_count,notnull,default:0"`
	// SuspendedAt, set by staff, stops the user's tokens, sessions and
	// sign-ins (suspend.go).
	SuspendedAt *time.Time `bun:"suspended_at"`
	CreatedAt   time.Time  `bun:"created_at,notnull"`
	UpdatedAt   time.Time  `bun:"updated_at,notnull"`
	Tags        []Tag      `bun:"m2m:user_tags,join:User=Tag"`
}

// Tag is a label shared by users and shows. A tag is its text: Folded,
// the TagKey of its name, is its identity and is unique, compared byte for
// byte (SQLite's BINARY collation; utf8mb4_bin on MySQL, set by migration
// 0006, since the default collations equate accents). Name is the spelling
// it was first created with; Slug is derived from it and is unique too
// (tagSlug, migration 0009), byte for byte like Folded.
type Tag struct {
	bun.BaseModel `bun:"table:tags,alias:t"`

	ID     int64  `bun:"id,pk,autoincrement"`
	Name   string `bun:"name,notnull,type:varchar(30)"`
	Folded string `bun:"folded,notnull,unique,type:varchar(120)"`
	Slug   string `bun:"slug,notnull,type:varchar(60)"`
}

// UserTag joins users and tags.
type UserTag struct {
	bun.BaseModel `bun:"table:user_tags,alias:ut"`

	UserID int64 `bun:"user_id,pk"`
	User   *User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	TagID  int64 `bun:"tag_id,pk"`
	Tag    *Tag  `bun:"rel:belongs-to,join:tag_id=id,on_delete:CASCADE"`
	// Position is the tag's place in the list the user gave, from 1 (0:
	// a link older than the order). Never 0 on insert: a zero value with a
	// default is left out of a multi-row insert on SQLite.
	Position int `bun:"position,notnull,default:0"`
}

// Token is an API token. Only its SHA-256 hash is stored.
type Token struct {
	bun.BaseModel `bun:"table:tokens,alias:tk"`

	ID         int64      `bun:"id,pk,autoincrement"`
	UserID     int64      `bun:"user_id,notnull"`
	User       *User      `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	Label      string     `bun:"label,notnull,type:varchar(100)"`
	Hash       string     `bun:"hash,notnull,unique,type:char(64)"`
	Prefix     string     `bun:"prefix,notnull,type:varchar(16)"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
}

// Follow records that Follower follows Followed.
type Follow struct {
	bun.BaseModel `bun:"table:follows"`

	FollowerID int64     `bun:"follower_id,pk"`
	Follower   *User     `bun:"rel:belongs-to,join:follower_id=id,on_delete:CASCADE"`
	FollowedID int64     `bun:"followed_id,pk"`
	Followed   *User     `bun:"rel:belongs-to,join:followed_id=id,on_delete:CASCADE"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
}
