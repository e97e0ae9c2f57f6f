package users

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/onair/onair/app"
)

// commands are "users create" and "tokens create"; their names and output
// are a public contract that operators script against.
func commands() []app.Command {
	return []app.Command{
		{
			Name:  "users create",
			Usage: "create a user; prints {\"user\": {...}} as JSON",
			Flags: func(fs *flag.FlagSet) func(context.Context, *app.Core, io.Writer) error {
				var n NewUser
				fs.StringVar(&n.Name, "name", "", "display name (required)")
				fs.StringVar(&n.Email, "email", "", "email address, used to sign in (required)")
				fs.StringVar(&n.Password, "password", "", "password for the web and admin sign-in (optional, at least 8 characters)")
				fs.BoolVar(&n.DJ, "dj", false, "mark as a DJ")
				fs.BoolVar(&n.Producer, "producer", false, "mark as a producer")
				fs.BoolVar(&n.Radio, "radio", false, "approve for radio shows")
				fs.StringVar(&n.Role, "role", "", "staff role: admin or moderator")
				return func(ctx context.Context, core *app.Core, stdout io.Writer) error {
					svc := NewService(core.DB, core.Config.PublicURL)
					svc.ReserveFrom(core)
					u, err := svc.Create(ctx, n)
					if err != nil {
						return err
					}
					view := svc.View(u, ViewOptions{Email: true, Radio: true, Tags: true})
					return writeJSON(stdout, map[string]any{"user": view})
				}
			},
		},
		{
			Name:  "tokens create",
			Usage: "issue an API token; prints only the token",
			Flags: func(fs *flag.FlagSet) func(context.Context, *app.Core, io.Writer) error {
				user := fs.String("user", "", "user id or email (required)")
				label := fs.String("label", "cli", "a label to recognise the token by")
				return func(ctx context.Context, core *app.Core, stdout io.Writer) error {
					if *user == "" {
						return fmt.Errorf("--user is required (an id or an email)")
					}
					svc := NewService(core.DB, core.Config.PublicURL)
					u, err := svc.Find(ctx, *user)
					if errors.Is(err, ErrNotFound) {
						return fmt.Errorf("no user %q", *user)
					}
					if err != nil {
						return err
					}
					plain, _, err := svc.IssueToken(ctx, u.ID, *label)
					if err != nil {
						return err
					}
					_, err = fmt.Fprintln(stdout, plain)
					return err
				}
			},
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
