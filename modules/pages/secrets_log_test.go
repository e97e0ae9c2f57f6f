package pages_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/mailtest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/users"
	"github.com/onair/onair/modules/webhooks"
)

var signedMedia = regexp.MustCompile(`/media/shows/\d+/t/(\d+)\.([0-9a-f]{32})/`)

// TestNoSecretInTheLog runs, with text and with JSON logs, a flow that
// makes and uses every kind of secret OnAir hands out: an API token (and a
// wrong one), a show's stream key (published with, refused when old,
// regenerated), a private show's signed media URL, a webhook's secret
// (delivered with, failed, rotated), a reset link (mailed through an SMTP
// server with a password, opened, used, opened again) — then finds none
// of their values in what the server logged.
func TestNoSecretInTheLog(t *testing.T) {
	testload.Heavy(t) // ffmpeg publishes
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		testload.Skip(t, "ffmpeg is not on PATH")
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) { secretsFlow(t, format == "json") })
	}
}

func secretsFlow(t *testing.T, jsonLogs bool) {
	b := make([]byte, 12)
	rand.Read(b)
	smtpPassword := "smtp-" + hex.EncodeToString(b)
	smtp := mailtest.Start(t, mailtest.Options{User: "onair", Password: smtpPassword})
	secrets := map[string]string{"SMTP password": smtpPassword}
	opts := onairtest.Options{JSONLogs: jsonLogs}
	if os.Getenv(onairtest.MySQLEnv) != "" {
		// The database URL with a password: a user of its own.
		opts.DatabaseURL = mysqlUserWithPassword(t, "db-"+hex.EncodeToString(b[:6]))
		secrets["database password"] = "db-" + hex.EncodeToString(b[:6])
	}
	opts.Configure = func(c *app.Config) {
		trustLoopback(c)
		c.Set(users.SettingSMTPURL, smtp.URL)
		c.Set(webhooks.SettingAllowPrivate, true)
	}
	env := onairtest.New(t, opts)

	// An API token, used, and a wrong one tried.
	dj := newPerson(t, env, "Secret Keeper")
	secrets["API token"] = dj.token
	env.Do("GET", "/v1/users/me", dj.token, nil).Expect(t, http.StatusOK)
	env.Do("GET", "/v1/users/me", dj.token+"0", nil).Expect(t, http.StatusUnauthorized)
	if resp, err := env.Client.Get(env.URL + "/v1/users/me?access_token=" + dj.token); err == nil {
		resp.Body.Close()
	}

	// A webhook: its secret signs a delivery that fails, then one that
	// goes through; the secret is rotated.
	var hits atomic.Int32
	got := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		got <- r.Header.Get("webhook-signature")
	}))
	t.Cleanup(hook.Close)
	wh := env.Do("POST", "/v1/webhooks", dj.token, map[string]any{"url": hook.URL + "/hook?k=v", "events": []string{"show.live"}}).
		Expect(t, http.StatusCreated).JSON(t)["webhook"].(map[string]any)
	secrets["webhook secret"] = wh["secret"].(string)
	whID := onairtest.ID(wh)
	env.Do("POST", path("/v1/webhooks/%d/ping", whID), dj.token, nil).Expect(t, http.StatusAccepted)
	testload.Poll(t, "the failed webhook delivery", func() error {
		if hits.Load() == 0 {
			return fmt.Errorf("no delivery yet")
		}
		return nil
	})

	// A restream destination's stream key: stored, listed masked, and
	// pushed to (an address that refuses: the error is logged).
	destKey := "dest-" + hex.EncodeToString(b)
	secrets["restream destination key"] = destKey
	env.Do("POST", "/v1/destinations", dj.token, map[string]any{"name": "Elsewhere", "url": "rtmp://127.0.0.1:1/live/" + destKey}).
		Expect(t, http.StatusCreated)

	// A private show: its key, regenerated, published with; the old one
	// refused.
	created := onairtest.CreateShow(t, env, dj.token, map[string]any{"name": "Secret Set", "private": true})
	id, oldKey := created.ID, created.Key
	secrets["old stream key"] = oldKey
	newKey := env.Do("POST", path("/v1/shows/%d/stream_key", id), dj.token, nil).Expect(t, http.StatusOK).JSON(t)["show"].(map[string]any)["stream_key"].(string)
	secrets["stream key"] = newKey
	lm, _ := onairtest.Module[*live.Module](env)
	rtmpBase := "rtmp://" + lm.RTMPAddr() + "/live/"
	refused := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x64:rate=10:duration=1",
		"-c:v", "libx264", "-preset", "ultrafast", "-f", "flv", rtmpBase+oldKey)
	if out, err := refused.CombinedOutput(); err == nil {
		t.Fatalf("ffmpeg published with the old key:\n%s", out)
	}
	publish(t, rtmpBase+newKey, 10)
	sh := onairtest.AwaitShow(t, env, dj.token, id, "live with a signed playlist", func(s map[string]any) bool {
		u, _ := s["video_url"].(string)
		return s["live"] == true && signedMedia.MatchString(u)
	})
	hls := sh["video_url"].(string)
	secrets["media signature"] = signedMedia.FindStringSubmatch(hls)[2]
	for _, u := range []string{hls, strings.Replace(hls, "/t/", "/T/", 1), strings.TrimSuffix(hls, "/"+hls[strings.LastIndex(hls, "/")+1:])} {
		if resp, err := env.Client.Get(u); err == nil {
			resp.Body.Close()
		}
	}
	if resp, err := env.Client.Get(hls); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the signed playlist: %v %v", err, resp)
	}

	// The webhook's second delivery goes through; then its secret rotates.
	env.Do("POST", path("/v1/webhooks/%d/ping", whID), dj.token, nil).Expect(t, http.StatusAccepted)
	select {
	case <-got:
	case <-time.After(testload.Patience):
		t.Fatal("no webhook delivery went through")
	}
	secrets["rotated webhook secret"] = env.Do("POST", path("/v1/webhooks/%d/secret", whID), dj.token, nil).
		Expect(t, http.StatusOK).JSON(t)["webhook"].(map[string]any)["secret"].(string)

	// A reset link: mailed, opened, refused once, used, opened again.
	v := newVisitor(t, env)
	form := v.get("/forgot")
	v.do("POST", "/forgot", url.Values{"csrf": {formCSRF(t, form)}, "email": {dj.user.Email}}, nil)
	link := resetLink.FindStringSubmatch(smtp.Next().Body)
	if link == nil {
		t.Fatal("no reset link mailed")
	}
	secrets["reset token"] = strings.TrimPrefix(link[2], "/reset/")
	page := v.get(link[2])
	v.post(link[2], url.Values{"csrf": {formCSRF(t, page)}, "password": {"short"}, "password_confirm": {"short"}})
	if p := v.post(link[2], url.Values{"csrf": {formCSRF(t, page)}, "password": {"a brand new secret"}, "password_confirm": {"a brand new secret"}}); p.status != http.StatusSeeOther {
		t.Fatalf("reset: %d\n%s", p.status, p.body)
	}
	for _, p := range []string{link[2], link[2] + "/", strings.ToUpper(link[2]), "/reset//" + secrets["reset token"], link[2] + "/more"} {
		newVisitor(t, env).get(p)
	}

	logs := env.Logs()
	for _, want := range []string{"/reset/REDACTED", "/t/REDACTED/", "webhooks", "publish refused"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q: the flow did not run as meant", want)
		}
	}
	for what, value := range secrets {
		if value == "" {
			t.Fatalf("no %s", what)
		}
		if strings.Contains(logs, value) {
			i := strings.Index(logs, value)
			t.Errorf("the %s is in the log: …%s…", what, logs[max(0, i-200):min(len(logs), i+len(value)+50)])
		}
	}
}

// mysqlUserWithPassword makes a fresh database and a user with password
// that owns it, dropped when the test ends, and returns its URL.
func mysqlUserWithPassword(t *testing.T, password string) string {
	t.Helper()
	raw := onairtest.FreshMySQL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, dsn, err := app.ParseDatabaseURL(os.Getenv(onairtest.MySQLEnv))
	if err != nil {
		t.Fatal(err)
	}
	root, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	name := "onair_u_" + hex.EncodeToString([]byte(password))[:12]
	db := strings.TrimPrefix(u.Path, "/")
	for _, q := range []string{
		"CREATE USER '" + name + "'@'%' IDENTIFIED BY '" + password + "'",
		"GRANT ALL ON " + db + ".* TO '" + name + "'@'%'",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		if root, err := sql.Open("mysql", dsn); err == nil {
			root.Exec("DROP USER IF EXISTS '" + name + "'@'%'")
			root.Close()
		}
	})
	u.User = url.UserPassword(name, password)
	return u.String()
}
