package app_test

import (
	"testing"

	"github.com/onair/onair/app"
)

func TestEscapeLike(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      "plain",
		"100%":       "100!%",
		"snake_case": "snake!_case",
		"wow!":       "wow!!",
		"!%_":        "!!!%!_",
	} {
		if got := app.EscapeLike(in); got != want {
			t.Errorf("EscapeLike(%q) = %q, want %q", in, got, want)
		}
	}
}
