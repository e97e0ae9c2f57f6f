package shows

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/app/events"
	"github.com/onair/onair/app/outbox"
	"github.com/onair/onair/modules/users"
)

// Service holds the shows module's operations: reads with the visibility
// rule, create and update, and the lifecycle (lifecycle.go). Handlers, the
// live-media module and the admin console all go through it. Its parts
// have their own types: the lists (Lists, lister.go), the API form of a
// show (Views, view.go), the stream keys (Keys, keys.go), the tags of
// listed shows (listTags, tags.go) and the uploaded images (image.go).
type Service struct {
	db *bun.DB
	// reader is the read pool of Lookup (app.Core.ReadDB).
	reader *bun.DB
	access access
	log    *slog.Logger
	window time.Duration

	// Lists answers the show lists (GET /v1/shows, a user's shows, the
	// pages and the console).
	Lists *Lister
	// Views renders shows in their API form; the live and downloads
	// modules install their media links in it.
	Views *Views
	// Keys checks and rotates stream keys.
	Keys *Keys

	// bus carries the Changed events (events.go): the boot's.
	bus *events.Bus
	// clock is the kernel's (Core.Clock).
	clock *app.Clock
	// outbox keeps the events (outbox.go) and relays them to the other
	// nodes: the boot's.
	outbox *outbox.Outbox

	// images checks, re-encodes and stores uploaded show images (the
	// users service's profile image code, image.go); nil until Provision.
	images *imageStore
}

// NewService returns the shows service of a booted core.
func NewService(core *app.Core) *Service {
	acc := access{authz: core.Authz}
	views := &Views{public: core.Config.PublicURL, rtmp: app.Get[string](core.Config, SettingRTMPURL)}
	s := &Service{
		db:     core.DB,
		reader: core.ReadDB(),
		access: acc,
		log:    core.Log,
		window: app.Get[time.Duration](core.Config, SettingReconnectWindow),
		Views:  views,
		Keys:   &Keys{db: core.DB, reader: core.ReadDB(), clock: core.Clock, access: acc},
		Lists:  newLister(core.ReadDB(), views, app.Get[int](core.Config, SettingListCache), core.Clock),
		bus:    core.Events,
		clock:  core.Clock,
		outbox: outbox.From(core),
	}
	return s
}

// DB is the database the service works on.
func (s *Service) DB() *bun.DB { return s.db }

// Errors of the service. The *app.Error ones render as themselves when a
// handler returns them (wrapped or not); errors.Is matches them.
var (
	// ErrNotFound: no such show, or one the viewer may not see.
	ErrNotFound = app.NotFound("show")
	// ErrNotLive: stop of a show that is not live (409).
	ErrNotLive = app.Conflict("the show is not live")
	// ErrNotComplete: archive of a show that has not finished (409).
	ErrNotComplete = app.Conflict("the show has not finished")
	// ErrRadioArchive: radio shows never archive (409).
	ErrRadioArchive = app.Conflict("radio shows are never archived")
	// ErrStarted: PUT of start or radio on a show that has already gone
	// live (409): its start is the actual start now.
	ErrStarted = app.Conflict("the show has already gone live")
	// ErrAudioOnlySettled: PUT of a different audio_only on a show that
	// has gone live (409): its media are packaged (and recorded) as they
	// were decided when it went live.
	ErrAudioOnlySettled = app.Conflict("audio_only cannot change once the show has gone live")
	// ErrRefused: a stream key that is unknown, wrong, or belongs to a
	// complete, deleted or off show. The live module refuses the publisher.
	ErrRefused = errors.New("shows: stream key refused")
)

// Thumbnail labels of the lifecycle.
const (
	LabelStartingSoon = "Starting Soon"
	LabelLive         = "Live"
	LabelFinished     = "Finished"
)

// Get returns a show with its owner and tags, without the visibility rule
// (for the system: live module, admin console).
func (s *Service) Get(ctx context.Context, id int64) (*Show, error) {
	return getShow(ctx, s.db, id)
}

// Lookup is Get on the read pool (app.Core.ReadDB), for a hot read that
// follows no write of its own (the visibility of a show's media): on
// SQLite it does not wait for the writer. It sees every change committed
// before it began.
func (s *Service) Lookup(ctx context.Context, id int64) (*Show, error) {
	return getShow(ctx, s.reader, id)
}

// getShow is Get on db (a transaction's, or the service's).
func getShow(ctx context.Context, db bun.IDB, id int64) (*Show, error) {
	sh := new(Show)
	if err := scanShow(ctx, db.NewSelect().Model(sh).Relation("User").Relation("Tags", orderTags), id); err != nil {
		return nil, err
	}
	sh.SortTags()
	return sh, nil
}

// scanShow runs q, a select of a show, on the show id: ErrNotFound when
// there is none.
func scanShow(ctx context.Context, q *bun.SelectQuery, id int64) error {
	err := q.Where("s.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("shows: get %d: %w", id, err)
	}
	return nil
}

// orderTags reads a show's tags in the order of their identity, byte for
// byte, the same on both databases; Show.SortTags then puts them in the
// order they were given.
func orderTags(q *bun.SelectQuery) *bun.SelectQuery { return q.OrderExpr("t.folded ASC") }

// Visible returns the show when viewer may see it, and ErrNotFound (a 404)
// otherwise, so a hidden show is indistinguishable from a missing one.
func (s *Service) Visible(ctx context.Context, id int64, viewer *app.Principal) (*Show, error) {
	sh, err := s.Get(ctx, id)
	return s.visible(sh, err, viewer)
}

// VisibleRow is Visible without the owner and the tags: one statement,
// for a hot path that needs only the show's own columns (a chat post
// reads its visibility, chat_enabled, owner id and start).
func (s *Service) VisibleRow(ctx context.Context, id int64, viewer *app.Principal) (*Show, error) {
	sh := new(Show)
	return s.visible(sh, scanShow(ctx, s.db.NewSelect().Model(sh), id), viewer)
}

// visible is the show read (or the read's error) as viewer may see it.
func (s *Service) visible(sh *Show, err error, viewer *app.Principal) (*Show, error) {
	if err != nil {
		return nil, err
	}
	if !s.CanView(sh, viewer) {
		return nil, ErrNotFound
	}
	return sh, nil
}

// CanView is the visibility rule: a private or off show is seen only by its
// owner and staff. A nil viewer is the system and sees everything.
func (s *Service) CanView(sh *Show, viewer *app.Principal) bool { return canView(sh, viewer) }

func canView(sh *Show, viewer *app.Principal) bool {
	if viewer == nil || sh.public() || viewer.UserID == sh.UserID {
		return true
	}
	return viewer.IsStaff()
}

// access is the permission rule of the shows' changes: Casbin, with the
// relation role "owner" for the show's owner, and the visibility rule.
type access struct{ authz *app.Authz }

// can asks Casbin, adding the relation role "owner" when by owns the show.
func (a access) can(by *app.Principal, sh *Show, act string) error {
	if sh != nil && by != nil && by.UserID == sh.UserID {
		return a.authz.Can(by, "shows", act, "owner")
	}
	return a.authz.Can(by, "shows", act)
}

// AddComments moves comments_count by delta (never below zero). Chat calls
// it inside its own transaction (db) when messages are posted or removed.
func (s *Service) AddComments(ctx context.Context, db bun.IDB, showID int64, delta int) error {
	if delta == 0 {
		return nil
	}
	if db == nil {
		db = s.db
	}
	res, err := db.NewUpdate().Model((*Show)(nil)).
		Set("comments_count = CASE WHEN comments_count + ? < 0 THEN 0 ELSE comments_count + ? END", delta, delta).
		Where("id = ?", showID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("shows: comments of %d: %w", showID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Input is what POST and PUT (and the admin console) may set. A nil field
// was not sent: on update it keeps its value. Start and EndsAt are the
// wire text ("YYYY-MM-DD HH:MM:SS", UTC) so every caller gets the same
// validation; an empty EndsAt (or JSON null) removes the scheduled end.
type Input struct {
	Name        *string
	Description *string
	Start       *string
	EndsAt      *string
	Private     *bool
	Headline    *bool
	Radio       *bool
	AudioOnly   *bool
	ChatEnabled *bool
	// Downloadable (extension) offers the archive's files to download;
	// on unless false (modules/downloads).
	Downloadable *bool
	Tags         *[]string
	// Image is an uploaded image file (multipart field "image"), nil
	// for no change (image.go).
	Image []byte
	// DescriptionOptional lets the description be empty or left out: the
	// studio's form, where a show may start as a name alone. The v1 API
	// never sets it, since the spec requires a description.
	DescriptionOptional bool

	// staff is set by StaffUpdate: the console's edit, which the owner
	// rule of Update does not bind.
	staff bool
}

// Limits of product-decisions.md, and of the extensions
// (docs/show-options.md): a scheduled end is at most MaxScheduledRun after
// the start, the longest a radio show runs (RadioMaxRun).
const (
	MaxName         = 100
	MaxDescription  = 5000
	MaxScheduledRun = 24 * time.Hour
	slugMax         = 100
)

// checked is a validated Input. endsAt is set when the input sets or
// removes the scheduled end (then end is the new value, nil: none).
type checked struct {
	start  *time.Time
	endsAt bool
	end    *time.Time
	tags   []string
}

// validate applies the field rules; every problem found is reported at once
// in one 422. cur is the show being changed (nil when creating): a
// scheduled end is checked against the start it will have.
func (in *Input) validate(cur *Show, now time.Time) (checked, error) {
	var out checked
	creating := cur == nil
	v := app.Validation{}
	if in.Name == nil && creating {
		v.Add("name", "is required")
	}
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		in.Name = &name
		switch n := runeLen(name); {
		case !validText(name, false):
			v.Add("name", "must be valid UTF-8 text without control characters")
		case app.NameProblem(name) != "":
			v.Add("name", app.NameProblem(name))
		case n == 0:
			v.Add("name", "is required")
		case n > MaxName:
			v.Add("name", fmt.Sprintf("must be at most %d characters", MaxName))
		}
	}
	if in.Description == nil && creating && !in.DescriptionOptional {
		v.Add("description", "is required")
	}
	if in.Description != nil {
		d := *in.Description
		switch {
		case !validText(d, true):
			v.Add("description", "must be valid UTF-8 text")
		case strings.TrimSpace(d) == "" && !in.DescriptionOptional:
			v.Add("description", "is required")
		case runeLen(d) > MaxDescription:
			v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
		}
	}
	if in.Start != nil && strings.TrimSpace(*in.Start) != "" {
		t, err := app.ParseTimestamp(*in.Start)
		switch {
		case err != nil:
			v.Add("start", "must be a UTC time as YYYY-MM-DD HH:MM:SS")
		case !t.After(now):
			v.Add("start", "must be in the future")
		default:
			out.start = &t
		}
	}
	in.validateEnd(cur, now, &out, v)
	if in.Tags != nil {
		for _, t := range *in.Tags {
			// White space inside a tag is folded (users.TagName), so a
			// tab or a newline there is a space, not a control character.
			if !validText(users.TagName(t), false) {
				v.Add("tags", "must be valid UTF-8 text without control characters")
			}
		}
		if _, bad := v["tags"]; !bad {
			tags, err := users.CheckTags("tags", *in.Tags)
			var apiErr *app.Error
			if errors.As(err, &apiErr) {
				for f, p := range apiErr.Fields {
					v.Add(f, p)
				}
			} else if err != nil {
				return out, err
			}
			out.tags = tags
		}
	}
	return out, v.Err()
}

// validateEnd reads ends_at and checks the scheduled end against the start
// the show will have (the new start, the current one, or now for a new
// show without one). A stored end is checked again only when the start
// moves, so a show that went live late keeps its end untouched.
func (in *Input) validateEnd(cur *Show, now time.Time, out *checked, v app.Validation) {
	var end *time.Time
	switch {
	case in.EndsAt != nil && strings.TrimSpace(*in.EndsAt) != "":
		t, err := app.ParseTimestamp(*in.EndsAt)
		if err != nil {
			v.Add("ends_at", "must be a UTC time as YYYY-MM-DD HH:MM:SS, or null")
			return
		}
		out.endsAt, out.end, end = true, &t, &t
	case in.EndsAt != nil:
		out.endsAt = true
		return
	case cur != nil && cur.EndsAt != nil && out.start != nil:
		end = cur.EndsAt
	default:
		return
	}
	if _, bad := v["start"]; bad {
		return
	}
	start := now
	switch {
	case out.start != nil:
		start = *out.start
	case cur != nil:
		start = cur.Start
	}
	switch {
	case !end.After(start):
		v.Add("ends_at", "must be after start")
	case end.Sub(start) > MaxScheduledRun:
		v.Add("ends_at", fmt.Sprintf("must be at most %d hours after start", int(MaxScheduledRun/time.Hour)))
	}
}

// Create stores a new show owned by by, with a slug unique among the
// owner's shows and a fresh stream key.
func (s *Service) Create(ctx context.Context, by *app.Principal, in Input) (*Show, error) {
	if err := s.access.can(by, nil, "create"); err != nil {
		return nil, err
	}
	if in.Radio != nil && *in.Radio {
		if err := s.access.can(by, nil, "create_radio"); err != nil {
			return nil, app.Forbidden("radio shows need a user approved for radio")
		}
	}
	now := s.clock.Stamp()
	jpg, imgErr, err := s.images.encodeImage(ctx, &in)
	if err != nil {
		return nil, err
	}
	c, err := in.validate(nil, now)
	if err := withImage(err, imgErr); err != nil {
		return nil, err
	}
	sh := &Show{
		UserID: by.UserID, Name: *in.Name, Description: derefString(in.Description),
		Start: now, EndsAt: c.end, CreatedAt: now, UpdatedAt: now,
		Private: deref(in.Private), Radio: deref(in.Radio), Headline: deref(in.Headline),
		AudioOnly: deref(in.AudioOnly), ChatDisabled: in.ChatEnabled != nil && !*in.ChatEnabled,
		DownloadsOff:   in.Downloadable != nil && !*in.Downloadable,
		ThumbnailLabel: LabelStartingSoon,
	}
	if c.start != nil {
		sh.Start = *c.start
	}
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	// Tags are shared rows; they are created (or found) before the show's
	// transaction, each in its own statement, so the transaction holds no
	// lock on them and sees them committed.
	tags, err := users.EnsureTags(ctx, s.db, c.tags)
	if err != nil {
		return nil, fmt.Errorf("shows: create: %w", err)
	}
	// A concurrent create can take the same slug between the read and the
	// insert: the unique index (user_id, slug) refuses it, and the
	// transaction runs again with another slug (app.NextSlug).
	var evs []Event
	var images []string // stored by each attempt
	err = app.RunInTxRetry(ctx, s.db, app.SlugAttempts, func(ctx context.Context, tx bun.Tx, attempt int) error {
		slug, err := freeSlug(ctx, tx, sh.UserID, sh.Name, attempt)
		if err != nil {
			return err
		}
		sh.ID, sh.Slug, sh.StreamKey, sh.ImageKey = 0, slug, "", nil
		sh.TagIDs = tagIDList(tags)
		if _, err := tx.NewInsert().Model(sh).Exec(ctx); err != nil {
			return err
		}
		sh.StreamKey = streamKey(sh.ID, secret)
		cols := []string{"stream_key"}
		if jpg != nil {
			// The key needs the id: the image is stored once the row
			// exists, and dropped below if this attempt does not commit.
			key, err := s.images.putImage(ctx, sh.ID, jpg)
			if err != nil {
				return err
			}
			images = append(images, key)
			sh.ImageKey, cols = &key, append(cols, "image_key")
		}
		if _, err := tx.NewUpdate().Model(sh).Column(cols...).WherePK().Exec(ctx); err != nil {
			return err
		}
		if err := addTags(ctx, tx, sh, tags); err != nil {
			return err
		}
		if err := addGrams(ctx, tx, sh); err != nil {
			return err
		}
		if sh.Headline {
			if err := clearOtherHeadlines(ctx, tx, sh); err != nil {
				return err
			}
		}
		evs, err = s.record(ctx, tx, sh.ID, by, &countState{}, EventCreated)
		return err
	})
	if err != nil {
		s.images.dropImages(ctx, images, "")
		return nil, fmt.Errorf("shows: create: %w", err)
	}
	if sh.ImageKey != nil {
		s.images.dropImages(ctx, images, *sh.ImageKey)
	}
	s.deliver(ctx, evs)
	return evs[0].Show, nil
}

// StaffUpdate is Update for staff in the console (Casbin "edit": name,
// description, tags and the like of anyone's show). The API never calls it.
func (s *Service) StaffUpdate(ctx context.Context, id int64, by *app.Principal, in Input) (*Show, error) {
	if err := s.access.authz.Can(by, "shows", "edit"); err != nil {
		return nil, err
	}
	in.staff = true
	return s.Update(ctx, id, by, in)
}

// Update changes the fields sent. Only the owner may (Casbin "update" with
// the owner relation), as the spec says of PUT /shows/:id; staff edit
// through StaffUpdate (the console).
func (s *Service) Update(ctx context.Context, id int64, by *app.Principal, in Input) (*Show, error) {
	staff := in.staff
	now := s.clock.Stamp()
	// The image is decoded before the row is locked; its refusal is
	// reported after the permission checks, with the other fields.
	jpg, imgErr, err := s.images.encodeImage(ctx, &in)
	if err != nil {
		return nil, wrap("update", id, err)
	}
	// New tags are created before the transaction, each committed, as in
	// Create: a tag another request creates at the same moment would
	// otherwise be invisible to this transaction's snapshot on MySQL, and
	// the show read back after the change would miss it. (Refusals are
	// decided in the transaction; a refused request leaves at most unused
	// tags, as a refused create does.)
	if in.Tags != nil {
		tagsOnly := Input{Tags: in.Tags}
		if c, err := tagsOnly.validate(&Show{}, now); err == nil && len(c.tags) > 0 {
			if _, err := users.EnsureTags(ctx, s.db, c.tags); err != nil {
				return nil, wrap("update", id, err)
			}
		}
	}
	// Replacing tags and grams can deadlock with another update on MySQL
	// (gap locks); the loser runs again.
	var evs []Event
	var newImage, oldImage string
	err = app.RunInTxRetry(ctx, s.db, 3, func(ctx context.Context, tx bun.Tx, _ int) error {
		sh, err := lockShow(ctx, tx, id)
		if err != nil {
			return err
		}
		if !s.CanView(sh, by) {
			return ErrNotFound
		}
		before, err := countSnapshot(ctx, tx, sh)
		if err != nil {
			return err
		}
		if err := s.access.can(by, sh, "update"); err != nil && !staff {
			return app.Forbidden("only the owner of the show may update it")
		}
		if in.Radio != nil && *in.Radio {
			if err := s.access.can(by, sh, "create_radio"); err != nil {
				return app.Forbidden("radio shows need a user approved for radio")
			}
		}
		c, err := in.validate(sh, now)
		if err := withImage(err, imgErr); err != nil {
			return err
		}
		ran := sh.Live || sh.Complete || sh.WentLiveAt != nil
		if ran && (c.start != nil || (in.Radio != nil && *in.Radio != sh.Radio)) {
			return ErrStarted
		}
		if ran && in.AudioOnly != nil && *in.AudioOnly != sh.AudioOnly {
			return ErrAudioOnlySettled
		}
		cols := []string{"updated_at"}
		sh.UpdatedAt = now
		if in.Name != nil {
			sh.Name = *in.Name
			cols = append(cols, "name")
			if err := setGrams(ctx, tx, sh); err != nil {
				return err
			}
		}
		if in.Description != nil {
			sh.Description = *in.Description
			cols = append(cols, "description")
		}
		if in.Private != nil {
			sh.Private = *in.Private
			cols = append(cols, "private")
		}
		if in.Radio != nil {
			sh.Radio = *in.Radio
			cols = append(cols, "radio")
		}
		if in.Headline != nil {
			sh.Headline = *in.Headline
			cols = append(cols, "headline")
		}
		if in.AudioOnly != nil {
			sh.AudioOnly = *in.AudioOnly
			cols = append(cols, "audio_only")
		}
		if in.ChatEnabled != nil {
			sh.ChatDisabled = !*in.ChatEnabled
			cols = append(cols, "chat_disabled")
		}
		if in.Downloadable != nil {
			sh.DownloadsOff = !*in.Downloadable
			cols = append(cols, "downloads_off")
		}
		if c.endsAt {
			sh.EndsAt = c.end
			cols = append(cols, "ends_at")
		}
		if c.start != nil {
			sh.Start = *c.start
			cols = append(cols, "start")
		}
		if jpg != nil {
			if newImage, err = s.images.putImage(ctx, sh.ID, jpg); err != nil {
				return err
			}
			oldImage = ""
			if sh.ImageKey != nil {
				oldImage = *sh.ImageKey
			}
			sh.ImageKey, cols = &newImage, append(cols, "image_key")
		}
		if _, err := tx.NewUpdate().Model(sh).Column(cols...).WherePK().Exec(ctx); err != nil {
			return err
		}
		if in.Tags != nil {
			if err := setTags(ctx, tx, sh, c.tags); err != nil {
				return err
			}
		} else if c.start != nil {
			if err := syncTagStart(ctx, tx, sh); err != nil {
				return err
			}
		}
		if in.Headline != nil && sh.Headline {
			if err := clearOtherHeadlines(ctx, tx, sh); err != nil {
				return err
			}
		}
		evs, err = s.record(ctx, tx, id, by, &before, EventUpdated)
		return err
	})
	if err != nil {
		// An image stored by an attempt that did not commit, unless it
		// is the one the show had (the same picture again).
		s.images.dropImages(ctx, []string{newImage}, oldImage)
		return nil, wrap("update", id, err)
	}
	s.images.dropImages(ctx, []string{oldImage}, newImage)
	s.deliver(ctx, evs)
	return evs[0].Show, nil
}

// freeSlug derives a slug from name that no other show of the user has
// (app.NextSlug: name, name-2, name-3…).
func freeSlug(ctx context.Context, db bun.IDB, userID int64, name string, attempt int) (string, error) {
	base := app.Slugify(name, slugMax)
	if base == "" {
		base = "show"
	}
	var taken []string
	err := db.NewSelect().Model((*Show)(nil)).Column("slug").
		Where("user_id = ?", userID).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("slug = ?", base).WhereOr("slug LIKE ? ESCAPE '!'", app.EscapeLike(base)+"-%")
		}).Scan(ctx, &taken)
	if err != nil {
		return "", err
	}
	used := make(map[string]bool, len(taken))
	for _, t := range taken {
		used[t] = true
	}
	return app.NextSlug(base, func(slug string) bool { return used[slug] }, attempt), nil
}

// clearOtherHeadlines makes sh the user's only headline show.
func clearOtherHeadlines(ctx context.Context, tx bun.IDB, sh *Show) error {
	_, err := tx.NewUpdate().Model((*Show)(nil)).Set("headline = ?", false).
		Where("user_id = ?", sh.UserID).Where("headline = ?", true).Where("id <> ?", sh.ID).Exec(ctx)
	return err
}

// lockShow reads a show's row for a state change. MySQL locks the row
// (SELECT … FOR UPDATE); SQLite runs on one connection, which serialises
// every transaction anyway.
func lockShow(ctx context.Context, tx bun.IDB, id int64) (*Show, error) {
	sh := new(Show)
	q := tx.NewSelect().Model(sh).Where("s.id = ?", id)
	if app.IsMySQL(tx) {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return sh, nil
}

// Stream keys are "sk_<show id>_<secret>", the secret 22 base62 characters
// (131 bits) from crypto/rand.
const (
	keyPrefix  = "sk_"
	secretLen  = 22
	base62     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	maxKeySize = 64
)

func newSecret() (string, error) {
	out := make([]byte, 0, secretLen)
	buf := make([]byte, 32)
	for len(out) < secretLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("shows: stream key randomness: %w", err)
		}
		for _, b := range buf {
			// 248 = 4*62: rejecting the rest keeps every character equally likely.
			if b < 248 && len(out) < secretLen {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out), nil
}

func streamKey(id int64, secret string) string {
	return keyPrefix + strconv.FormatInt(id, 10) + "_" + secret
}

// keyShowID reads the show id out of a well-formed key.
func keyShowID(key string) (int64, bool) {
	if len(key) > maxKeySize {
		return 0, false
	}
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return 0, false
	}
	idText, secret, ok := strings.Cut(rest, "_")
	if !ok || len(secret) != secretLen {
		return 0, false
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 1 {
		return 0, false
	}
	return id, true
}

// wrap prefixes an error with the operation unless it is an API error,
// which must reach the client as it is.
func wrap(op string, id int64, err error) error {
	var apiErr *app.Error
	if errors.As(err, &apiErr) {
		return err
	}
	return fmt.Errorf("shows: %s %d: %w", op, id, err)
}

func deref(b *bool) bool { return b != nil && *b }

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func runeLen(s string) int { return len([]rune(s)) }
