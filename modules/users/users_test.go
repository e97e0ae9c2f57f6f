package users_test

import (
	"net/http"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

func TestMeSmoke(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		env := onairtest.New(t, onairtest.Options{Backend: backend})
		u, tok := env.CreateUser("Ann Example")
		body := env.Do("GET", "/v1/users/me", tok, nil).Expect(t, http.StatusOK).JSON(t)
		user := body["user"].(map[string]any)
		if onairtest.ID(user) != u.ID {
			t.Fatalf("me is %v, want %d", user["id"], u.ID)
		}
	})
}
