package users

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// ProfileInput is what a user may change of their own profile (PUT
// /v1/users/me and /account/profile). A nil field was not sent and keeps
// its value; an empty description, location or website clears it. The
// slug does not follow a new name: the user's URLs stay.
type ProfileInput struct {
	Name, Description, Location, Website *string
	Tags                                 *[]string
}

// Limits of the profile fields.
const (
	MaxLocation = 100
	MaxWebsite  = 200
	MaxBio      = 5000
)

// validate applies the field rules and reports every problem at once.
func (in *ProfileInput) validate() ([]string, error) {
	v := app.Validation{}
	check := func(field string, p *string, max int, required bool) {
		if p == nil {
			return
		}
		*p = strings.TrimSpace(*p)
		switch n := utf8.RuneCountInString(*p); {
		case app.TextProblem(*p) != "":
			v.Add(field, app.TextProblem(*p))
		case field == "name" && app.NameProblem(*p) != "":
			v.Add(field, app.NameProblem(*p))
		case n == 0 && required:
			v.Add(field, "is required")
		case n > max:
			v.Add(field, fmt.Sprintf("must be at most %d characters", max))
		}
	}
	check("name", in.Name, 100, true)
	check("description", in.Description, MaxBio, false)
	check("location", in.Location, MaxLocation, false)
	check("website", in.Website, MaxWebsite, false)
	if in.Website != nil && *in.Website != "" && v["website"] == "" {
		u, err := url.Parse(*in.Website)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.Add("website", "must be an http or https address")
		}
	}
	var tags []string
	if in.Tags != nil {
		t, err := CheckTags("tags", *in.Tags)
		if err != nil {
			return nil, err
		}
		tags = t
	}
	return tags, v.Err()
}

// UpdateProfile changes the fields sent of user id's profile.
func (s *Service) UpdateProfile(ctx context.Context, id int64, in ProfileInput) (*User, error) {
	tags, err := in.validate()
	if err != nil {
		return nil, err
	}
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	cols := []string{"updated_at"}
	optional := func(col string, p *string, dst **string) {
		if p == nil {
			return
		}
		cols = append(cols, col)
		if *p == "" {
			*dst = nil
			return
		}
		val := *p
		*dst = &val
	}
	if in.Name != nil {
		u.Name = *in.Name
		cols = append(cols, "name")
	}
	optional("description", in.Description, &u.Description)
	optional("location", in.Location, &u.Location)
	optional("website", in.Website, &u.Website)
	u.UpdatedAt = s.now()
	err = app.RunInTxRetry(ctx, s.db, 3, func(ctx context.Context, tx bun.Tx, _ int) error {
		if _, err := tx.NewUpdate().Model(u).Column(cols...).WherePK().Exec(ctx); err != nil {
			return err
		}
		if in.Tags == nil {
			return nil
		}
		if _, err := tx.NewDelete().Model((*UserTag)(nil)).Where("user_id = ?", u.ID).Exec(ctx); err != nil {
			return err
		}
		rows, err := EnsureTags(ctx, tx, tags)
		if err != nil || len(rows) == 0 {
			return err
		}
		links := make([]UserTag, 0, len(rows))
		for i, t := range rows {
			links = append(links, UserTag{UserID: u.ID, TagID: t.ID, Position: i + 1})
		}
		_, err = tx.NewInsert().Model(&links).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("users: update profile %d: %w", id, err)
	}
	return s.Get(ctx, id)
}

// ErrWrongPassword: a password change whose current password is wrong.
var ErrWrongPassword = app.Validation{"current_password": "is not your current password"}.Err()

// ChangePassword sets a new password after checking the current one, and
// ends every other web session of the user (keep is the hash of the
// session that asked, "" for none). API tokens are left alone: they are
// revoked on the account page.
func (s *Service) ChangePassword(ctx context.Context, id int64, current, next, keep string) error {
	u, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if u.PasswordHash == "" || bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) != nil {
		return ErrWrongPassword
	}
	return s.SetPassword(ctx, id, next, keep)
}

// SetPassword sets a password without the current one (the reset link)
// and ends the user's web sessions but keep.
func (s *Service) SetPassword(ctx context.Context, id int64, password, keep string) error {
	if err := checkPassword(password); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("users: hash password: %w", err)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*User)(nil)).Set("password_hash = ?", string(hash)).Set("updated_at = ?", s.now()).
			Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("users: set password %d: %w", id, err)
		}
		q := tx.NewDelete().Model((*Session)(nil)).Where("user_id = ?", id)
		if keep != "" {
			q = q.Where("hash <> ?", keep)
		}
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("users: end sessions of %d: %w", id, err)
		}
		return nil
	})
}

// checkPassword is the rule of a new password (as at sign-up).
func checkPassword(password string) error {
	switch {
	case len(password) < 8:
		return app.Validation{"password": "must be at least 8 characters"}.Err()
	case len(password) > 72:
		return app.Validation{"password": "must be at most 72 bytes"}.Err()
	}
	return nil
}

// migrateProfile is migration 0007: the profile's website and uploaded
// images. A fresh database has the columns from 0001 (the model); an older
// one gets them here. Each column is added only when missing, so the step
// can run again after a crash (MySQL commits DDL at once).
func migrateProfile(ctx context.Context, db bun.IDB) error {
	cols, err := migrations.Columns(ctx, db, "users")
	if err != nil {
		return err
	}
	for _, c := range []struct{ name, ddl string }{
		{"website", "VARCHAR(200)"},
		{"avatar_key", "VARCHAR(200)"},
		{"cover_key", "VARCHAR(200)"},
		{"suspended_at", "DATETIME"},
	} {
		if !cols[c.name] {
			if err := execDDL(ctx, db, "ALTER TABLE users ADD COLUMN "+c.name+" "+c.ddl+" NULL"); err != nil {
				return err
			}
		}
	}
	return nil
}
