package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

// message is the go-live mail to u about sh: the subject names the DJ and
// the show, the body links the show's page, and the headers offer the
// one-click unsubscribe of RFC 8058 (for this follow).
func (m *Module) message(u *users.User, sh *shows.Show) (subject, body string, headers [][2]string) {
	public := m.core.Config.PublicURL
	dj := sh.User.Name
	link := public + "/" + sh.User.Slug + "/" + sh.Slug
	unsub := m.unsubscribeURL(u.ID, sh.UserID)
	subject = fmt.Sprintf("%s is live: %s", dj, sh.Name)
	body = fmt.Sprintf(`Hello %s,

%s has just gone live on OnAir with "%s".

Listen now: %s

You get this mail because you follow %s. Stop these mails for %s:
%s
or turn off every go-live mail on your account page: %s/account
`, u.Name, dj, sh.Name, link, dj, dj, unsub, public)
	headers = [][2]string{
		{"List-Unsubscribe", "<" + unsub + ">"},
		{"List-Unsubscribe-Post", "List-Unsubscribe=One-Click"},
		{"List-Id", "OnAir go-live mails <golive." + listHost(public) + ">"},
		{"Auto-Submitted", "auto-generated"},
	}
	return subject, body, headers
}

func listHost(public string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(public, "https://"), "http://")
	if i := strings.IndexAny(h, ":/"); i >= 0 {
		h = h[:i]
	}
	return h
}

// unsubscribeURL is the one-click link that turns off follower's go-live
// mails for followed.
func (m *Module) unsubscribeURL(follower, followed int64) string {
	return m.core.Config.PublicURL + "/unsubscribe/" + m.signer.token(follower, followed)
}

// signer makes and checks the unsubscribe tokens: the follow's two ids
// and an HMAC of them. They do not expire: an old mail's link keeps
// working, and all it can do is turn a notification off.
type signer struct{ key []byte }

func (s signer) mac(follower, followed int64) string {
	h := hmac.New(sha256.New, s.key)
	fmt.Fprintf(h, "unsubscribe.%d.%d", follower, followed)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (s signer) token(follower, followed int64) string {
	return strconv.FormatInt(follower, 10) + "-" + strconv.FormatInt(followed, 10) + "-" + s.mac(follower, followed)
}

// parse checks a token and returns its follow.
func (s signer) parse(token string) (follower, followed int64, ok bool) {
	parts := strings.Split(token, "-")
	if len(parts) != 3 || len(token) > 100 {
		return 0, 0, false
	}
	a, err1 := strconv.ParseInt(parts[0], 10, 64)
	b, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || a < 1 || b < 1 {
		return 0, 0, false
	}
	if !hmac.Equal([]byte(parts[2]), []byte(s.mac(a, b))) {
		return 0, 0, false
	}
	return a, b, true
}
