package users

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/onair/onair/app"
)

// A lookup under way when a token is revoked (or a user changed) must not
// put its answer back: it may have read the row before the change, and
// the revocation is promised at once on the node that made it.
func TestTokenCacheKeepsNoAnswerOlderThanADrop(t *testing.T) {
	c := &tokenCache{ttl: time.Hour}
	sum := sha256.Sum256([]byte("onair_token"))
	p := &app.Principal{UserID: 1, TokenID: 7, Roles: []string{app.RoleUser}}
	now := time.Now()

	gen := c.generation() // the lookup begins...
	c.drop(7, 0)          // ...the token is revoked meanwhile...
	c.put(sum, p, now, gen)
	if c.get(sum, now) != nil {
		t.Fatal("an answer read before the revocation was kept")
	}

	// A lookup that began after the drop is kept, and lasts its ttl.
	c.put(sum, p, now, c.generation())
	if c.get(sum, now) != p {
		t.Fatal("a fresh answer was not kept")
	}
	if c.get(sum, now.Add(time.Hour)) != nil {
		t.Fatal("an answer outlived the ttl")
	}
}
