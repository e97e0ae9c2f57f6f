package podcast_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mmcdole/gofeed"

	"github.com/onair/onair/internal/broadcasttest"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/internal/testload"
	"github.com/onair/onair/modules/downloads"
	"github.com/onair/onair/modules/podcast"
	"github.com/onair/onair/modules/shows"
)

func get(t *testing.T, url string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

var alternate = regexp.MustCompile(`<link rel="alternate" type="application/rss\+xml" title="[^"]*" href="([^"]+)"`)

// TestFeed: the user page links a podcast feed that a real parser reads,
// with what Apple requires of a show and an episode: the channel's
// title, description, language, category, explicit flag and a square
// image of 1400 pixels or more; the episode's title, a guid that is not a
// permalink, an RFC 822 pubDate, itunes:duration, and an enclosure whose
// length and type are those the file is served with. The feed answers
// conditional requests, and a show made private leaves it.
func TestFeed(t *testing.T) {
	broadcasttest.Require(t)
	env := onairtest.New(t, onairtest.Options{})
	u, token := env.CreateUser("Pod Caster")
	b := onairtest.CreateShow(t, env, token, map[string]any{"name": "Episode One", "description": "The first set."})
	show := broadcasttest.Archive(t, b, 5, false)

	// The user page links the feed.
	resp, page := get(t, show["user"].(map[string]any)["url"].(string), nil)
	m := alternate.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("user page %d without a feed link:\n%s", resp.StatusCode, page)
	}
	feedURL := string(m[1])
	if feedURL != podcast.FeedURL(env.URL, u.ID) || !bytes.Contains(page, []byte(`id="podcast-feed"`)) {
		t.Errorf("feed link %q", feedURL)
	}

	// The episode appears once its audio file is made.
	var raw []byte
	var feed *gofeed.Feed
	testload.Poll(t, "the episode in the feed", func() error {
		resp, raw = get(t, feedURL, nil)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("feed %d", resp.StatusCode)
		}
		var err error
		if feed, err = gofeed.NewParser().Parse(bytes.NewReader(raw)); err != nil {
			return fmt.Errorf("parse: %v\n%s", err, raw)
		}
		if len(feed.Items) != 1 {
			return fmt.Errorf("%d items", len(feed.Items))
		}
		return nil
	})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/rss+xml") {
		t.Errorf("feed Content-Type %q", ct)
	}
	if feed.FeedType != "rss" || feed.FeedVersion != "2.0" || feed.Title != "Pod Caster" || feed.Description == "" || feed.Language == "" {
		t.Errorf("channel: %s %s %q %q %q", feed.FeedType, feed.FeedVersion, feed.Title, feed.Description, feed.Language)
	}
	it := feed.ITunesExt
	if it == nil || it.Image == "" || it.Explicit != "false" || len(it.Categories) == 0 || it.Categories[0].Text == "" {
		t.Fatalf("channel iTunes tags: %+v", it)
	}
	imgResp, img := get(t, it.Image, nil)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(img))
	if imgResp.StatusCode != http.StatusOK || err != nil || (format != "png" && format != "jpeg") ||
		cfg.Width != cfg.Height || cfg.Width < 1400 || cfg.Width > 3000 {
		t.Errorf("itunes:image %s: %d %v %s %dx%d", it.Image, imgResp.StatusCode, err, format, cfg.Width, cfg.Height)
	}
	guids := feed.Extensions["podcast"]["guid"]
	want := uuid.NewSHA1(uuid.MustParse("ead4c236-bf58-58c6-a2c6-a6b28d128cb6"), []byte(strings.TrimPrefix(feedURL, "http://"))).String()
	if len(guids) != 1 || guids[0].Value != want {
		t.Errorf("podcast:guid %v, want %s", guids, want)
	}

	item := feed.Items[0]
	if item.Title != "Episode One" || item.Description != "The first set." || item.Link != show["url"] {
		t.Errorf("item: %q %q %q", item.Title, item.Description, item.Link)
	}
	if item.GUID == "" || !bytes.Contains(raw, []byte(`<guid isPermaLink="false">`+item.GUID+`</guid>`)) {
		t.Errorf("guid %q is not marked as no permalink:\n%s", item.GUID, raw)
	}
	pub := regexp.MustCompile(`<pubDate>([^<]+)</pubDate>`).FindSubmatch(raw)
	if pub == nil {
		t.Fatal("no pubDate")
	}
	if _, err := time.Parse(time.RFC1123Z, string(pub[1])); err != nil || item.PublishedParsed == nil {
		t.Errorf("pubDate %q is not RFC 822: %v", pub[1], err)
	}
	if item.ITunesExt == nil || item.ITunesExt.Duration != strconv.Itoa(int(show["duration"].(float64))) {
		t.Errorf("itunes:duration %+v, show lasted %v s", item.ITunesExt, show["duration"])
	}
	if len(item.Enclosures) != 1 {
		t.Fatalf("enclosures %v", item.Enclosures)
	}
	enc := item.Enclosures[0]
	if enc.URL != show["downloads"].(map[string]any)["audio"] {
		t.Errorf("enclosure %s is not the show's audio download %v", enc.URL, show["downloads"])
	}
	fileResp, file := get(t, enc.URL, nil)
	if fileResp.StatusCode != http.StatusOK || enc.Length != strconv.Itoa(len(file)) || enc.Type != fileResp.Header.Get("Content-Type") || enc.Type != "audio/mp4" {
		t.Errorf("enclosure length %s type %s; the file is %d bytes of %s (%d)", enc.Length, enc.Type, len(file), fileResp.Header.Get("Content-Type"), fileResp.StatusCode)
	}

	// Conditional requests: 304 for the feed as last fetched (a thumbnail
	// made meanwhile changes the feed, so this fetches again until two
	// fetches agree).
	var etag string
	testload.Poll(t, "a 304 for the current feed", func() error {
		r, _ := get(t, feedURL, nil)
		etag = r.Header.Get("ETag")
		lastMod := r.Header.Get("Last-Modified")
		if etag == "" || lastMod == "" {
			return fmt.Errorf("ETag %q, Last-Modified %q", etag, lastMod)
		}
		if r, _ := get(t, feedURL, http.Header{"If-None-Match": {etag}}); r.StatusCode != http.StatusNotModified {
			return fmt.Errorf("If-None-Match: %d", r.StatusCode)
		}
		if r, _ := get(t, feedURL, http.Header{"If-Modified-Since": {lastMod}}); r.StatusCode != http.StatusNotModified {
			return fmt.Errorf("If-Modified-Since: %d", r.StatusCode)
		}
		return nil
	})

	// A show made private leaves the feed.
	env.Do("PUT", fmt.Sprintf("/v1/shows/%d", b.ID), token, map[string]any{"private": true}).Expect(t, http.StatusOK)
	r, body := get(t, feedURL, http.Header{"If-None-Match": {etag}})
	if r.StatusCode != http.StatusOK || bytes.Contains(body, []byte("<item>")) {
		t.Errorf("after the show went private: %d\n%s", r.StatusCode, body)
	}
}

// TestFeedNotFound: unknown users and malformed ids are 404.
func TestFeedNotFound(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	for _, path := range []string{"/podcasts/999999.xml", "/podcasts/abc.xml", "/podcasts/0.xml", "/podcasts/-1.xml"} {
		if r, _ := get(t, env.URL+path, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
	}
	u, _ := env.CreateUser("Empty Feed")
	r, body := get(t, podcast.FeedURL(env.URL, u.ID), nil)
	if r.StatusCode != http.StatusOK || bytes.Contains(body, []byte("<item>")) {
		t.Errorf("a user without archived shows: %d\n%s", r.StatusCode, body)
	}
	if _, err := gofeed.NewParser().Parse(bytes.NewReader(body)); err != nil {
		t.Errorf("an empty feed does not parse: %v", err)
	}
}

// TestFeedKeepsTheNewest: a feed lists at most podcast.MaxEpisodes
// episodes, the newest with an audio file.
func TestFeedKeepsTheNewest(t *testing.T) {
	env := onairtest.New(t, onairtest.Options{})
	u, _ := env.CreateUser("Prolific")
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := podcast.MaxEpisodes + 5
	// and the newest of all, archived without audio (its video download
	// only): no episode.
	list := make([]shows.Show, n+1)
	for i := range list {
		d := 60
		at := start.Add(time.Duration(i) * time.Hour)
		list[i] = shows.Show{UserID: u.ID, Slug: fmt.Sprintf("set-%d", i), Name: fmt.Sprintf("Set %d", i), Description: "d",
			Start: at, CreatedAt: at, UpdatedAt: at, Duration: &d, Complete: true, Archive: true,
			ThumbnailLabel: "00:01:00", StreamKey: fmt.Sprintf("sk_%d_x", i)}
	}
	if _, err := env.Core.DB.NewInsert().Model(&list).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	files := make([]downloads.File, n+1)
	for i := range list {
		files[i] = downloads.File{ShowID: list[i].ID, Ready: true, AudioSize: 1000 + int64(i), UpdatedAt: start}
	}
	files[n].AudioSize, files[n].VideoSize = 0, 5000
	if _, err := env.Core.DB.NewInsert().Model(&files).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	_, raw := get(t, podcast.FeedURL(env.URL, u.ID), nil)
	feed, err := gofeed.NewParser().Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(feed.Items) != podcast.MaxEpisodes || feed.Items[0].Title != fmt.Sprintf("Set %d", n-1) ||
		feed.Items[len(feed.Items)-1].Title != fmt.Sprintf("Set %d", n-podcast.MaxEpisodes) {
		t.Errorf("%d items from %q to %q", len(feed.Items), feed.Items[0].Title, feed.Items[len(feed.Items)-1].Title)
	}
}
