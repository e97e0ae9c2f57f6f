package shows

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/modules/users"
)

// Show is a live or archived audio/video show. The booleans carry its state
// (see lifecycle.go for the rules that move it); WentLiveAt, EndedAt and
// DisconnectedAt are the bookkeeping those rules need and are not part of
// the API.
type Show struct {
	bun.BaseModel `bun:"table:shows,alias:s"`

	// ID is the show's key: Bun's pk, the rowid on SQLite. On MySQL the
	// table's primary key is (user_id, id), one owner's shows stored
	// together, and id has a unique key of its own (migration 0043,
	// clusterByOwner); a lookup by id alone goes through that key.
	ID          int64       `bun:"id,pk,autoincrement"`
	UserID      int64       `bun:"user_id,notnull"`
	User        *users.User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	Slug        string      `bun:"slug,notnull,type:varchar(120)"`
	Name        string      `bun:"name,notnull,type:varchar(100)"`
	Description string      `bun:"description,notnull,type:text"`
	// Start is the scheduled start, then the actual start once the show
	// has gone live; lists sort by it.
	Start time.Time `bun:"start,notnull"`
	// EndsAt is the scheduled end (extension beyond v1), nil when none
	// was given: informative only, nothing stops the show then
	// (docs/show-options.md).
	EndsAt    *time.Time `bun:"ends_at"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	UpdatedAt time.Time  `bun:"updated_at,notnull"`
	// Duration is the run length in seconds, nil until the show has run.
	Duration *int `bun:"duration"`

	Live     bool `bun:"live,notnull,default:false"`
	Complete bool `bun:"complete,notnull,default:false"`
	Archive  bool `bun:"archive,notnull,default:false"`
	Featured bool `bun:"featured,notnull,default:false"`
	Upload   bool `bun:"upload,notnull,default:false"`
	Private  bool `bun:"private,notnull,default:false"`
	Radio    bool `bun:"radio,notnull,default:false"`
	Off      bool `bun:"off,notnull,default:false"`
	Headline bool `bun:"headline,notnull,default:false"`
	// AudioOnly (extension): the live module packages the audio rendition
	// alone and ignores the video a publisher sends. Settled once the
	// show has gone live.
	AudioOnly bool `bun:"audio_only,notnull,default:false"`
	// ChatDisabled is the API's chat_enabled=false (extension): new chat
	// messages are refused; the history stays readable. The owner and
	// staff toggle it at any time. Stored inverted so that the zero value
	// is the default: Bun writes DEFAULT for a zero field with a default.
	ChatDisabled bool `bun:"chat_disabled,notnull,default:false"`
	// DownloadsOff is the API's downloadable=false (extension): the
	// archive offers no audio and video files to download
	// (modules/downloads). Stored inverted like ChatDisabled.
	DownloadsOff bool `bun:"downloads_off,notnull,default:false"`

	CommentsCount  int `bun:"comments_count,notnull,default:0"`
	FavoritesCount int `bun:"favorites_count,notnull,default:0"`
	// PeakViewers is the most viewers the show had at once while live
	// (peak.go); its owner and staff see it.
	PeakViewers int `bun:"peak_viewers,notnull,default:0"`

	ThumbnailLabel string `bun:"thumbnail_label,notnull,type:varchar(32)"`
	// Media URLs may be absolute or paths on the public base; View makes
	// them absolute.
	VideoURL *string `bun:"video_url,type:varchar(500)"`
	AudioURL *string `bun:"audio_url,type:varchar(500)"`
	ImageURL *string `bun:"image_url,type:varchar(500)"`
	GifURL   *string `bun:"gif_url,type:varchar(500)"`
	// ImageKey is the store key of the image the owner uploaded
	// (image.go); when set it is the show's image_url, before any
	// grabbed frame.
	ImageKey *string `bun:"image_key,type:varchar(200)"`

	// StreamKey is "sk_<id>_<secret>"; it is shown to the owner in write
	// responses, so it is stored as is (like Twitch or Owncast keys).
	StreamKey string `bun:"stream_key,notnull,type:varchar(100)"`

	WentLiveAt     *time.Time `bun:"went_live_at"`
	EndedAt        *time.Time `bun:"ended_at"`
	DisconnectedAt *time.Time `bun:"disconnected_at"`

	Tags []users.Tag `bun:"m2m:show_tags,join:Show=Tag"`
	// TagIDs is a copy of the ids of the show's tags, comma-separated, in
	// the order the owner gave them, written with show_tags in the same
	// transaction (setTags): a list reads a page's tags in its rows,
	// without a subquery a row, and every answer gives the tags in its
	// order.
	TagIDs string `bun:"tag_ids,notnull,type:varchar(200),default:''" json:"-"`
}

// public tells whether every viewer may see the show: neither private
// nor taken off air.
func (sh *Show) public() bool { return !sh.Private && !sh.Off }

// SortTags puts Tags in the order the owner gave them (TagIDs); a tag
// TagIDs does not name (a row written before the copy existed) goes last,
// in the order it was read.
func (sh *Show) SortTags() {
	if len(sh.Tags) < 2 || sh.TagIDs == "" {
		return
	}
	at := make(map[int64]int, len(sh.Tags))
	i := 0
	for f := range strings.SplitSeq(sh.TagIDs, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil {
			if _, dup := at[id]; !dup {
				at[id] = i
				i++
			}
		}
	}
	slices.SortStableFunc(sh.Tags, func(a, b users.Tag) int {
		pa, oka := at[a.ID]
		pb, okb := at[b.ID]
		switch {
		case oka && okb:
			return pa - pb
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
}

// ShowTag joins shows and the tags they share with users. Start is a copy
// of the show's start, so the tag filter can walk (tag_id, start, show_id)
// in list order instead of sorting every show of a popular tag.
type ShowTag struct {
	bun.BaseModel `bun:"table:show_tags,alias:st"`

	ShowID int64      `bun:"show_id,pk"`
	Show   *Show      `bun:"rel:belongs-to,join:show_id=id,on_delete:CASCADE"`
	TagID  int64      `bun:"tag_id,pk"`
	Tag    *users.Tag `bun:"rel:belongs-to,join:tag_id=id,on_delete:CASCADE"`
	Start  time.Time  `bun:"start,notnull"`
}

// Favorite records that a user favorited a show (extension beyond v1).
type Favorite struct {
	bun.BaseModel `bun:"table:show_favorites,alias:sf"`

	UserID    int64       `bun:"user_id,pk"`
	User      *users.User `bun:"rel:belongs-to,join:user_id=id,on_delete:CASCADE"`
	ShowID    int64       `bun:"show_id,pk"`
	Show      *Show       `bun:"rel:belongs-to,join:show_id=id,on_delete:CASCADE"`
	CreatedAt time.Time   `bun:"created_at,notnull"`
}
