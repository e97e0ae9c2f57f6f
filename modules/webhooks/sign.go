package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret, as Standard Webhooks asks.
const SecretPrefix = "whsec_"

// newSecret is "whsec_" and the base64 of 32 random bytes.
func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhooks: secret randomness: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// Sign is the Standard Webhooks signature of one message under one secret:
// "v1," and the base64 HMAC-SHA256, keyed with the secret's decoded base64
// part, of "{id}.{timestamp}.{body}".
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhooks: bad secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// signatures is the webhook-signature header: the current secret's
// signature, then the previous secret's while it is still valid after a
// rotation, space-separated.
func (w *Webhook) signatures(msgID string, ts time.Time, body []byte) (string, error) {
	out, err := Sign(w.Secret, msgID, ts, body)
	if err != nil {
		return "", err
	}
	if w.OldSecret != "" && w.OldSecretUntil != nil && ts.Before(*w.OldSecretUntil) {
		old, err := Sign(w.OldSecret, msgID, ts, body)
		if err != nil {
			return "", err
		}
		out += " " + old
	}
	return out, nil
}
