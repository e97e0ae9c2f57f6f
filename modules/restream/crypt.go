package restream

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// keyBox seals stream keys with AES-256-GCM under a key derived from the
// install's secret "restream.keys" (ONAIR_SECRET_KEY, or the database's
// onair_secrets). The owner's id is the additional data, so a sealed key
// copied to another user's row does not open there.
type keyBox struct{ aead cipher.AEAD }

func newKeyBox(secret []byte) (*keyBox, error) {
	k := sha256.Sum256(append([]byte("onair restream keys v1\x00"), secret...))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("restream: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("restream: cipher: %w", err)
	}
	return &keyBox{aead: aead}, nil
}

// errSealed is a sealed key that does not open: another install's secret,
// or a damaged row.
var errSealed = errors.New("restream: the stream key does not decrypt (was ONAIR_SECRET_KEY changed?)")

func (b *keyBox) seal(userID int64, key string) (string, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := b.aead.Seal(nonce, nonce, []byte(key), []byte(strconv.FormatInt(userID, 10)))
	return "v1:" + base64.RawStdEncoding.EncodeToString(out), nil
}

func (b *keyBox) open(userID int64, sealed string) (string, error) {
	if len(sealed) < 3 || sealed[:3] != "v1:" {
		return "", errSealed
	}
	raw, err := base64.RawStdEncoding.DecodeString(sealed[3:])
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", errSealed
	}
	n := b.aead.NonceSize()
	key, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(strconv.FormatInt(userID, 10)))
	if err != nil {
		return "", errSealed
	}
	return string(key), nil
}
