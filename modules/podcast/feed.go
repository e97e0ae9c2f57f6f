package podcast

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/httprange"
	"github.com/onair/onair/modules/downloads"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/users"
)

var errNoUsers = errors.New("podcast: the users module is not provisioned")

// MaxEpisodes bounds a feed: the newest shows.
const MaxEpisodes = 300

// Namespaces of the feed.
const (
	nsItunes  = "http://www.itunes.com/dtds/podcast-1.0.dtd"
	nsPodcast = "https://podcastindex.org/namespace/1.0"
	nsAtom    = "http://www.w3.org/2005/Atom"
	nsContent = "http://purl.org/rss/1.0/modules/content/"
)

// podcastNamespace is the UUIDv5 namespace of podcast:guid (Podcasting 2.0:
// the guid is UUIDv5 of the feed URL without its scheme and trailing
// slashes).
var podcastNamespace = uuid.MustParse("ead4c236-bf58-58c6-a2c6-a6b28d128cb6")

type rss struct {
	XMLName xml.Name `xml:"rss"`
	Version string   `xml:"version,attr"`
	Itunes  string   `xml:"xmlns:itunes,attr"`
	Podcast string   `xml:"xmlns:podcast,attr"`
	Atom    string   `xml:"xmlns:atom,attr"`
	Content string   `xml:"xmlns:content,attr"`
	Channel channel  `xml:"channel"`
}

type channel struct {
	Title         string      `xml:"title"`
	Link          string      `xml:"link"`
	Self          atomLink    `xml:"atom:link"`
	Description   string      `xml:"description"`
	Language      string      `xml:"language"`
	Generator     string      `xml:"generator"`
	LastBuildDate string      `xml:"lastBuildDate,omitempty"`
	Author        string      `xml:"itunes:author"`
	Image         itunesImage `xml:"itunes:image"`
	Category      category    `xml:"itunes:category"`
	Explicit      string      `xml:"itunes:explicit"`
	Type          string      `xml:"itunes:type"`
	GUID          string      `xml:"podcast:guid"`
	Items         []item      `xml:"item"`
}

type atomLink struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
}

type itunesImage struct {
	Href string `xml:"href,attr"`
}

type category struct {
	Text string `xml:"text,attr"`
}

type item struct {
	Title       string    `xml:"title"`
	Description string    `xml:"description"`
	Link        string    `xml:"link"`
	GUID        guid      `xml:"guid"`
	PubDate     string    `xml:"pubDate"`
	Enclosure   enclosure `xml:"enclosure"`
	Duration    int       `xml:"itunes:duration"`
	Explicit    string    `xml:"itunes:explicit"`
	EpisodeType string    `xml:"itunes:episodeType"`
}

type guid struct {
	IsPermaLink string `xml:"isPermaLink,attr"`
	Value       string `xml:",chardata"`
}

type enclosure struct {
	URL    string `xml:"url,attr"`
	Length int64  `xml:"length,attr"`
	Type   string `xml:"type,attr"`
}

// feed is GET /podcasts/:id.xml: the user's public archived shows whose
// audio download is made, newest first, with ETag and Last-Modified.
func (m *Module) feed(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return app.NotFound("podcast")
	}
	ctx := c.UserContext()
	u, err := m.users.Get(ctx, id)
	if errors.Is(err, users.ErrNotFound) || err == nil && u.SuspendedAt != nil {
		return app.NotFound("podcast")
	}
	if err != nil {
		return err
	}
	body, modified, err := m.render(ctx, u)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := &c.Response().Header
	h.Set(fiber.HeaderContentType, "application/rss+xml; charset=utf-8")
	h.Set(fiber.HeaderCacheControl, "public, max-age=300")
	h.Set(fiber.HeaderETag, etag)
	h.Set(fiber.HeaderLastModified, modified.UTC().Format(http.TimeFormat))
	h.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	if httprange.MatchETag(c.Get(fiber.HeaderIfNoneMatch), etag) || notModifiedSince(c.Get(fiber.HeaderIfModifiedSince), c.Get(fiber.HeaderIfNoneMatch), modified) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	return c.Send(body)
}

// notModifiedSince applies If-Modified-Since when no If-None-Match was
// sent (RFC 9110 13.1.3).
func notModifiedSince(since, noneMatch string, modified time.Time) bool {
	if since == "" || noneMatch != "" {
		return false
	}
	t, err := http.ParseTime(since)
	return err == nil && !modified.Truncate(time.Second).After(t)
}

// render builds the feed of u and the time it last changed.
func (m *Module) render(ctx context.Context, u *users.User) ([]byte, time.Time, error) {
	public := m.core.Config.PublicURL
	self := FeedURL(public, u.ID)
	var list []shows.Show
	err := m.core.DB.NewSelect().Model(&list).
		Column("s.id", "s.user_id", "s.slug", "s.name", "s.description", "s.start", "s.duration", "s.updated_at", "s.private").
		Where("s.user_id = ? AND s.archive = ? AND s.private = ? AND s.off = ? AND s.radio = ? AND s.downloads_off = ?", u.ID, true, false, false, false, false).
		Where("EXISTS (SELECT 1 FROM show_downloads AS sd WHERE sd.show_id = s.id AND sd.ready = ? AND sd.audio_size > 0)", true).
		OrderExpr("s.start DESC, s.id DESC").Limit(MaxEpisodes).Scan(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("podcast: shows of user %d: %w", u.ID, err)
	}
	ids := make([]int64, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	files, err := m.downloads.Ready(ctx, ids)
	if err != nil {
		return nil, time.Time{}, err
	}
	modified := u.UpdatedAt
	description := "Shows of " + u.Name + " on OnAir."
	if u.Description != nil && strings.TrimSpace(*u.Description) != "" {
		description = *u.Description
	}
	ch := channel{
		Title: u.Name, Link: public + "/" + u.Slug, Description: description,
		Self:     atomLink{Href: self, Rel: "self", Type: "application/rss+xml"},
		Language: "en", Generator: "OnAir", Author: u.Name,
		Image:    itunesImage{Href: public + "/podcasts/" + strconv.FormatInt(u.ID, 10) + "/cover.png"},
		Category: category{Text: "Music"}, Explicit: "false", Type: "episodic",
		GUID: podcastGUID(self),
	}
	for i := range list {
		sh := &list[i]
		f, ok := files[sh.ID]
		if !ok {
			continue
		}
		if f.UpdatedAt.After(modified) {
			modified = f.UpdatedAt
		}
		if sh.UpdatedAt.After(modified) {
			modified = sh.UpdatedAt
		}
		dur := 0
		if sh.Duration != nil {
			dur = *sh.Duration
		}
		desc := sh.Description
		if strings.TrimSpace(desc) == "" {
			desc = sh.Name
		}
		ch.Items = append(ch.Items, item{
			Title: sh.Name, Description: desc, Link: public + "/" + u.Slug + "/" + sh.Slug,
			GUID:      guid{IsPermaLink: "false", Value: EpisodeGUID(public, sh.ID)},
			PubDate:   sh.Start.UTC().Format(time.RFC1123Z),
			Enclosure: enclosure{URL: m.downloads.URL(sh, downloads.AudioFile), Length: f.AudioSize, Type: downloads.AudioType},
			Duration:  dur, Explicit: "false", EpisodeType: "full",
		})
	}
	ch.LastBuildDate = modified.UTC().Format(time.RFC1123Z)
	doc := rss{Version: "2.0", Itunes: nsItunes, Podcast: nsPodcast, Atom: nsAtom, Content: nsContent, Channel: ch}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, time.Time{}, fmt.Errorf("podcast: encode: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), modified, nil
}

// podcastGUID is the Podcasting 2.0 podcast:guid of a feed URL.
func podcastGUID(feed string) string {
	u, err := url.Parse(feed)
	s := feed
	if err == nil {
		s = u.Host + u.Path
	}
	return uuid.NewSHA1(podcastNamespace, []byte(strings.TrimRight(s, "/"))).String()
}

// EpisodeGUID is an episode's guid: stable for the show (the install's
// public host and the show's id), and not a link.
func EpisodeGUID(publicURL string, showID int64) string {
	host := publicURL
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return "urn:uuid:" + uuid.NewSHA1(podcastNamespace, []byte(host+"/shows/"+strconv.FormatInt(showID, 10))).String()
}
