package users

import (
	"context"
	"fmt"

	"github.com/onair/onair/app"
)

// The changes staff make to a user (the console calls them after Casbin
// has allowed the action). Each returns the user as it is afterwards, so
// the caller can record before and after.

// Flags are the marks staff set on a user; a nil field is left unchanged.
type Flags struct {
	DJ, Producer, Featured *bool
}

// SetFlags changes the user's dj, producer and featured marks.
func (s *Service) SetFlags(ctx context.Context, id int64, f Flags) (*User, error) {
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var cols []string
	for _, x := range []struct {
		col string
		v   *bool
		dst *bool
	}{{"dj", f.DJ, &u.DJ}, {"producer", f.Producer, &u.Producer}, {"featured", f.Featured, &u.Featured}} {
		if x.v != nil {
			*x.dst = *x.v
			cols = append(cols, x.col)
		}
	}
	if len(cols) == 0 {
		return u, nil
	}
	if err := s.Update(ctx, u, cols...); err != nil {
		return nil, err
	}
	return u, nil
}

// SetRole makes the user an admin, a moderator, or (role "") no staff.
func (s *Service) SetRole(ctx context.Context, id int64, role string) (*User, error) {
	if role != "" && role != app.RoleAdmin && role != app.RoleModerator {
		return nil, app.Validation{"role": "must be admin, moderator or empty"}.Err()
	}
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	u.Role = role
	if err := s.Update(ctx, u, "role"); err != nil {
		return nil, err
	}
	return u, nil
}

// SetRadio approves the user for radio shows, or revokes the approval; a
// pending request is settled either way. The next API call of the user
// already sees it (roles are read with the token).
func (s *Service) SetRadio(ctx context.Context, id int64, approved bool) (*User, error) {
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	u.Radio, u.RadioRequested = approved, false
	if err := s.Update(ctx, u, "radio", "radio_requested"); err != nil {
		return nil, err
	}
	return u, nil
}

// RequestRadio asks staff for the radio approval. Asking again, or when
// already approved, changes nothing.
func (s *Service) RequestRadio(ctx context.Context, id int64) (*User, error) {
	u, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if u.Radio || u.RadioRequested {
		return u, nil
	}
	u.RadioRequested = true
	if err := s.Update(ctx, u, "radio_requested"); err != nil {
		return nil, fmt.Errorf("users: request radio %d: %w", id, err)
	}
	return u, nil
}
