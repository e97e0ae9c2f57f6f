package live_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/live"
)

// liveOf waits for the node to serve (its cleanup would otherwise stop it
// mid-start) and returns its live module.
func liveOf(t *testing.T, env *onairtest.Env) *live.Module {
	t.Helper()
	env.Do("GET", "/healthz", "", nil).Expect(t, 200)
	m, ok := onairtest.Module[*live.Module](env)
	if !ok {
		t.Fatal("no live module")
	}
	return m
}

func signingKey(t *testing.T, env *onairtest.Env) []byte {
	t.Helper()
	liveOf(t, env)
	key, err := env.Core.Secret(context.Background(), "live.media-signing")
	if err != nil {
		t.Fatalf("secret: %v", err)
	}
	return key
}

// A private show's media URL signed by one node plays from another: both
// nodes of one database sign with one key.
func TestSigningKeySharedByNodes(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		a := onairtest.New(t, onairtest.Options{Backend: backend})
		b := onairtest.New(t, onairtest.Options{DatabaseURL: a.Core.Config.DatabaseURL})
		if !bytes.Equal(signingKey(t, a), signingKey(t, b)) {
			t.Fatal("the two nodes have different signing keys")
		}
		now := time.Now()
		token := liveOf(t, a).SignToken(42, now)
		if !liveOf(t, b).ValidToken(42, token, now) {
			t.Fatalf("token %s signed by A is refused by B", token)
		}
		if liveOf(t, b).ValidToken(43, token, now) {
			t.Fatal("a token of show 42 opens show 43")
		}
		for _, env := range []*onairtest.Env{a, b} {
			if _, err := os.Stat(filepath.Join(env.Core.Config.DataDir, "media", "signing.key")); err == nil {
				t.Fatal("a node still writes a signing key into its data dir")
			}
		}
	})
}

// Two nodes started at the same moment on one fresh database end with one
// key: the loser of the insert reads the winner's.
func TestSigningKeyConcurrentBoots(t *testing.T) {
	db := onairtest.FreshMySQL(t)
	tokens := make([]string, 2)
	now := time.Now()
	var start sync.WaitGroup
	start.Add(2)
	t.Run("boots", func(t *testing.T) {
		for i := range tokens {
			t.Run("node", func(t *testing.T) {
				t.Parallel()
				start.Done()
				start.Wait()
				env := onairtest.New(t, onairtest.Options{DatabaseURL: db})
				tokens[i] = liveOf(t, env).SignToken(7, now)
			})
		}
	})
	if tokens[0] == "" || tokens[0] != tokens[1] {
		t.Fatalf("nodes booted together sign differently: %q and %q", tokens[0], tokens[1])
	}
}

// With ONAIR_SECRET_KEY, nodes on different databases agree, nothing is
// stored, and changing the key rotates the signing key.
func TestSecretKeyDerivesSigningKey(t *testing.T) {
	t.Parallel()
	withKey := func(k string) onairtest.Options {
		return onairtest.Options{Configure: func(c *app.Config) { c.SecretKey = k }}
	}
	k1, k2 := strings.Repeat("a", 40), strings.Repeat("b", 40)
	a, b, c := onairtest.New(t, withKey(k1)), onairtest.New(t, withKey(k1)), onairtest.New(t, withKey(k2))
	if got, want := signingKey(t, a), app.DeriveSecret(k1, "live.media-signing"); !bytes.Equal(got, want) {
		t.Fatal("the signing key is not HMAC-SHA256(ONAIR_SECRET_KEY, name)")
	}
	now := time.Now()
	token := liveOf(t, a).SignToken(5, now)
	if !liveOf(t, b).ValidToken(5, token, now) {
		t.Fatal("two nodes with one ONAIR_SECRET_KEY disagree")
	}
	if liveOf(t, c).ValidToken(5, token, now) {
		t.Fatal("a token outlives a change of ONAIR_SECRET_KEY")
	}
	n, err := a.Core.DB.NewSelect().Table("onair_secrets").Count(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("secrets stored with ONAIR_SECRET_KEY set: %d rows, %v", n, err)
	}
}

// An install upgraded from a release that kept the key in the data dir
// keeps its key, so the URLs it handed out stay valid; the file is retired.
func TestLegacySigningKeyImported(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		old := bytes.Repeat([]byte{0x5a}, 32)
		var keyFile string
		a := onairtest.New(t, onairtest.Options{Backend: backend, Configure: func(c *app.Config) {
			keyFile = filepath.Join(c.DataDir, "media", "signing.key")
			if err := os.MkdirAll(filepath.Dir(keyFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(keyFile, old, 0o600); err != nil {
				t.Fatal(err)
			}
		}})
		if !bytes.Equal(signingKey(t, a), old) {
			t.Fatal("the data dir's signing key was not imported")
		}
		if _, err := os.Stat(keyFile); err == nil {
			t.Fatal("the imported key file is still in place")
		}
		if _, err := os.Stat(keyFile + ".imported"); err != nil {
			t.Fatalf("the imported key file was not kept aside: %v", err)
		}
		b := onairtest.New(t, onairtest.Options{DatabaseURL: a.Core.Config.DatabaseURL})
		if !bytes.Equal(signingKey(t, b), old) {
			t.Fatal("a second node does not use the imported key")
		}
	})
}
