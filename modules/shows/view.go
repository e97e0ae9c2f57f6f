package shows

import (
	"html"
	"strconv"
	"strings"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// View is the API form of a Show, fields in the spec's order. StreamURL
// and StreamKey appear only in write responses (POST, PUT, stop).
type View struct {
	ID           int64          `json:"id"`
	URL          string         `json:"url"`
	ObjectURL    string         `json:"object_url"`
	Slug         string         `json:"slug"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Start        app.Timestamp  `json:"start"`
	CreatedAt    app.Timestamp  `json:"created_at"`
	Duration     *int           `json:"duration"`
	Live         bool           `json:"live"`
	Complete     bool           `json:"complete"`
	Archive      bool           `json:"archive"`
	Featured     bool           `json:"featured"`
	Upload       bool           `json:"upload"`
	Private      bool           `json:"private"`
	Radio        bool           `json:"radio"`
	Off          bool           `json:"off"`
	EndsAt       *app.Timestamp `json:"ends_at"`
	AudioOnly    bool           `json:"audio_only"`
	ChatEnabled  bool           `json:"chat_enabled"`
	Downloadable bool           `json:"downloadable"`
	// Downloads (extension) are the archive's files, when its owner
	// allows it and the downloads module offers them; null otherwise.
	Downloads      *Downloads `json:"downloads"`
	CommentsCount  int        `json:"comments_count"`
	FavoritesCount int        `json:"favorites_count"`
	ThumbnailLabel string     `json:"thumbnail_label"`
	VideoURL       *string    `json:"video_url"`
	AudioURL       *string    `json:"audio_url"`
	ImageURL       string     `json:"image_url"`
	GifURL         *string    `json:"gif_url"`
	EmbedCode      string     `json:"embed_code"`
	StreamURL      *string    `json:"stream_url,omitempty"`
	StreamKey      *string    `json:"stream_key,omitempty"`
	// Ingest (an extension) lists every ingest address of the key, in
	// write responses only.
	Ingest *Ingest `json:"ingest,omitempty"`
	// PeakViewers is for the owner and staff only (ViewFor).
	PeakViewers *int            `json:"peak_viewers,omitempty"`
	Tags        []users.TagView `json:"tags"`
	User        *users.View     `json:"user"`
}

// Views renders shows in their API form. The media links are the live
// module's (signed for a private show, ingest addresses, playback
// sessions) and the downloads module's: each installs its part here.
type Views struct {
	public string // ONAIR_PUBLIC_URL
	rtmp   string // ONAIR_RTMP_URL

	// signMedia, set by the live module, turns the media URLs of a private
	// show into signed, expiring ones.
	signMedia func(sh *Show, url string) string
	// viewerToken, set by the live module, makes a playback session
	// token (SetViewerTokens).
	viewerToken func(showID int64) string
	// downloads gives an archived show's download URLs (SetDownloads).
	downloads func(sh *Show) *Downloads
	// ingest, set by the live module, lists the addresses a stream key
	// publishes to (View's ingest).
	ingest func(key string) Ingest
}

// View is Views.View: the form most callers want.
func (s *Service) View(sh *Show, write bool) *View { return s.Views.View(sh, write) }

// View renders sh (loaded with User and Tags). write=true is the form of
// the POST, PUT and stop responses: it adds stream_url and stream_key and
// the owner's email and radio.
func (vs *Views) View(sh *Show, write bool) *View {
	return vs.view(sh, write, nil)
}

// view is View with the owner's rendering given (nil: rendered here from
// sh.User). It must be that of sh.User in the form write asks for.
func (vs *Views) view(sh *Show, write bool, owner *users.View) *View {
	id := strconv.FormatInt(sh.ID, 10)
	v := &View{
		ID:             sh.ID,
		ObjectURL:      vs.public + "/v1/shows/" + id,
		Slug:           sh.Slug,
		Name:           sh.Name,
		Description:    sh.Description,
		Start:          app.Timestamp(sh.Start),
		CreatedAt:      app.Timestamp(sh.CreatedAt),
		Duration:       sh.Duration,
		Live:           sh.Live,
		Complete:       sh.Complete,
		Archive:        sh.Archive,
		Featured:       sh.Featured,
		Upload:         sh.Upload,
		Private:        sh.Private,
		Radio:          sh.Radio,
		Off:            sh.Off,
		AudioOnly:      sh.AudioOnly,
		ChatEnabled:    !sh.ChatDisabled,
		Downloadable:   !sh.DownloadsOff,
		CommentsCount:  sh.CommentsCount,
		FavoritesCount: sh.FavoritesCount,
		ThumbnailLabel: sh.ThumbnailLabel,
		VideoURL:       vs.media(sh, sh.VideoURL),
		AudioURL:       vs.media(sh, sh.AudioURL),
		GifURL:         vs.media(sh, sh.GifURL),
		EmbedCode: `<iframe src="` + html.EscapeString(vs.public+"/embed/"+id) +
			`" width="640" height="360" frameborder="0" allow="autoplay; fullscreen" allowfullscreen></iframe>`,
		Tags: users.TagViews(sh.Tags),
	}
	if sh.Archive && !sh.DownloadsOff && vs.downloads != nil {
		v.Downloads = vs.downloads(sh)
	}
	if sh.EndsAt != nil {
		end := app.Timestamp(*sh.EndsAt)
		v.EndsAt = &end
	}
	var uploaded *string
	if sh.ImageKey != nil {
		u := "/media/" + *sh.ImageKey
		uploaded = &u
	}
	if img := vs.media(sh, uploaded); img != nil {
		v.ImageURL = *img
	} else if img := vs.media(sh, sh.ImageURL); img != nil {
		v.ImageURL = *img
	} else {
		v.ImageURL = vs.public + "/media/shows/" + id + "/placeholder.svg"
	}
	opts := users.ForShowRead
	if write {
		opts = users.ForShowWrite
		rtmp, key := vs.rtmp, sh.StreamKey
		v.StreamURL, v.StreamKey = &rtmp, &key
		in := vs.IngestOf(key)
		v.Ingest = &in
	}
	if sh.User != nil {
		if owner == nil {
			owner = users.NewView(vs.public, sh.User, opts)
		}
		v.User = owner
		v.URL = vs.public + "/" + sh.User.Slug + "/" + sh.Slug
	}
	return v
}

// ViewFor is View for a reader: the show's owner and staff also get
// peak_viewers, the most viewers it had at once (an audience figure of the
// broadcaster's, as on Twitch's dashboard, not the public's).
func (vs *Views) ViewFor(sh *Show, write bool, by *app.Principal) *View {
	return vs.viewFor(sh, write, by, nil)
}

func (vs *Views) viewFor(sh *Show, write bool, by *app.Principal, owner *users.View) *View {
	v := vs.view(sh, write, owner)
	if by != nil && (by.UserID == sh.UserID || by.IsStaff()) {
		peak := sh.PeakViewers
		v.PeakViewers = &peak
	}
	return v
}

// listViews renders a page of a list for by. The shows of one owner share
// one rendering of the owner (views are not changed once made): a page of
// an owner's list is 50 shows of one owner.
func (vs *Views) listViews(list []Show, by *app.Principal) []*View {
	views := make([]*View, len(list))
	owners := make(map[int64]*users.View)
	for i := range list {
		sh := &list[i]
		v := vs.viewFor(sh, false, by, owners[sh.UserID])
		if v.User != nil {
			owners[sh.UserID] = v.User
		}
		views[i] = v
	}
	return views
}

// media is a stored media URL made absolute and, for a private show,
// signed by the live module (see SetMediaSigner).
func (vs *Views) media(sh *Show, u *string) *string {
	abs := vs.absolute(u)
	if abs == nil || vs.signMedia == nil || !sh.Private {
		return abs
	}
	signed := vs.signMedia(sh, *abs)
	return &signed
}

// Ingest lists the addresses a broadcaster may publish a stream key to,
// one per configured listener ("" when off): the RTMP and RTMPS server
// URLs (the key goes apart, as stream_key), and the SRT URL, which
// carries the key in its streamid.
type Ingest struct {
	RTMP  string `json:"rtmp"`
	RTMPS string `json:"rtmps,omitempty"`
	SRT   string `json:"srt,omitempty"`
}

// SetIngest installs the function that lists a key's ingest addresses.
// The live module, which runs the listeners, provides it.
func (vs *Views) SetIngest(list func(key string) Ingest) { vs.ingest = list }

// IngestOf lists the ingest addresses of key (the studio shows them).
func (vs *Views) IngestOf(key string) Ingest {
	if vs.ingest == nil {
		return Ingest{RTMP: vs.rtmp}
	}
	return vs.ingest(key)
}

// SetMediaSigner installs the function that signs the media URLs of
// private shows. The live module, which serves the media, provides it.
func (vs *Views) SetMediaSigner(sign func(sh *Show, url string) string) { vs.signMedia = sign }

// SetViewerTokens installs the function that makes a playback session
// token of a live show. The live module, which counts the viewers,
// provides it.
func (vs *Views) SetViewerTokens(token func(showID int64) string) { vs.viewerToken = token }

// ViewerToken is a new playback session of the show for a player page to
// put in the live master playlist's URL (?vs=), so the page's player
// counts as one viewer whoever shares its address; "" without the live
// module.
func (vs *Views) ViewerToken(showID int64) string {
	if vs.viewerToken == nil {
		return ""
	}
	return vs.viewerToken(showID)
}

// Downloads are the URLs of an archived show's files (extension): the
// audio as M4A and, for a show with video, the video as MP4.
type Downloads struct {
	Audio *string `json:"audio,omitempty"`
	Video *string `json:"video,omitempty"`
}

// SetDownloads installs the function that gives an archived show's
// download URLs (signed for a private show), or nil when it has none. The
// downloads module, which makes and serves the files, provides it; View
// asks it only for archived shows whose owner allows downloads.
func (vs *Views) SetDownloads(fn func(sh *Show) *Downloads) { vs.downloads = fn }

// absolute makes a stored media URL absolute on the public base.
func (vs *Views) absolute(u *string) *string {
	if u == nil || *u == "" {
		return nil
	}
	if strings.HasPrefix(*u, "/") {
		abs := vs.public + *u
		return &abs
	}
	return u
}
