package app

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/uptrace/bun"

	"github.com/onair/onair/migrations"
)

// Per-install secrets (the media URL signing key, and whatever a module
// needs next) are the same on every node of one install. Without
// ONAIR_SECRET_KEY each one is drawn at random once and kept in the
// database; with it, each one is HMAC-SHA256(ONAIR_SECRET_KEY, name), so
// nothing secret is stored and changing the setting rotates them all.

// SecretSize is the length of a generated or derived secret.
const SecretSize = 32

// maxSecretSize bounds an imported secret (the value column holds its hex).
const maxSecretSize = 64

// minSecretKey is the shortest ONAIR_SECRET_KEY accepted.
const minSecretKey = 32

// secretRow is one stored secret; the primary key on name is what makes
// two nodes starting at once end with one value.
type secretRow struct {
	bun.BaseModel `bun:"table:onair_secrets"`

	Name  string `bun:"name,pk,type:varchar(64)"`
	Value string `bun:"value,notnull,type:varchar(255)"` // hex
}

// kernelSet is the kernel's own schema steps, run before any module's
// under the id prefix "kernel:".
var kernelSet = migrations.Set{Module: "kernel", Migrations: []migrations.Migration{
	{ID: "0001_secrets", Up: migrations.CreateTables((*secretRow)(nil))},
}}

// secrets caches the secrets read in this process: they never change
// while it runs.
type secrets struct {
	mu    sync.Mutex
	cache map[string][]byte
}

// Secret returns the install's secret called name (such as
// "live.media-signing"), the same on every node of the install: derived
// from ONAIR_SECRET_KEY when it is set, else read from the database, where
// the first node to ask stores a random one.
func (c *Core) Secret(ctx context.Context, name string) ([]byte, error) {
	return c.secret(ctx, name, nil)
}

// ImportSecret is Secret for a secret an earlier release kept elsewhere
// (a file in the data dir): when the database holds none yet, value
// becomes the install's secret, so what was signed with it stays valid.
// It returns the secret in force, which is another node's when that node
// imported or created one first, and the derived one when
// ONAIR_SECRET_KEY is set.
func (c *Core) ImportSecret(ctx context.Context, name string, value []byte) ([]byte, error) {
	if len(value) == 0 || len(value) > maxSecretSize {
		return nil, fmt.Errorf("secrets: %s: an imported secret has 1 to %d bytes", name, maxSecretSize)
	}
	return c.secret(ctx, name, value)
}

func (c *Core) secret(ctx context.Context, name string, seed []byte) ([]byte, error) {
	if name == "" || len(name) > 64 {
		return nil, fmt.Errorf("secrets: name %q must have 1 to 64 characters", name)
	}
	if c.Config.SecretKey != "" {
		return DeriveSecret(c.Config.SecretKey, name), nil
	}
	c.secrets.mu.Lock()
	defer c.secrets.mu.Unlock()
	if v, ok := c.secrets.cache[name]; ok {
		return append([]byte(nil), v...), nil
	}
	v, err := storedSecret(ctx, c.DB, name, seed)
	if err != nil {
		return nil, err
	}
	if c.secrets.cache == nil {
		c.secrets.cache = map[string][]byte{}
	}
	c.secrets.cache[name] = v
	return append([]byte(nil), v...), nil
}

// DeriveSecret is the secret called name under ONAIR_SECRET_KEY key.
func DeriveSecret(key, name string) []byte {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(name))
	return h.Sum(nil)
}

// storedSecret reads the secret, inserting seed (or random bytes) when
// the table has none. Two nodes inserting at once both reach the database;
// the primary key refuses the second, which then reads the first's value.
func storedSecret(ctx context.Context, db bun.IDB, name string, seed []byte) ([]byte, error) {
	for range 3 {
		var row secretRow
		err := db.NewSelect().Model(&row).Where("name = ?", name).Scan(ctx)
		if err == nil {
			v, err := hex.DecodeString(row.Value)
			if err != nil || len(v) == 0 {
				return nil, fmt.Errorf("secrets: %s: the stored value is not hex", name)
			}
			return v, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("secrets: read %s: %w", name, err)
		}
		v := seed
		if v == nil {
			v = make([]byte, SecretSize)
			if _, err := rand.Read(v); err != nil {
				return nil, fmt.Errorf("secrets: generate %s: %w", name, err)
			}
		}
		_, err = db.NewInsert().Model(&secretRow{Name: name, Value: hex.EncodeToString(v)}).Exec(ctx)
		if err == nil {
			return v, nil
		}
		if !IsDuplicate(err) {
			return nil, fmt.Errorf("secrets: store %s: %w", name, err)
		}
	}
	return nil, fmt.Errorf("secrets: %s: neither stored nor readable", name)
}
