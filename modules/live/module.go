// Package live is the live-media module: the RTMP ingest server, in-process
// HLS packaging (an A/V and an audio-only rendition), the archive of every
// non-radio show as a VOD playlist, thumbnails, and the media routes that
// serve all of it (with signed, expiring URLs for private shows).
//
// The protocol work lives in sub-packages (amf0, rtmp, flv, hls); this
// package ties a publication to its show through the shows module's
// lifecycle service, which keeps every state rule.
package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/store"
	"github.com/onair/onair/modules/live/hls"
	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/live/srt"
	"github.com/onair/onair/modules/shows"
)

func init() { app.Register(&Module{}) }

// Module is the live-media module.
type Module struct {
	core  *app.Core
	shows *shows.Service
	rtmp  *rtmp.Server
	ln    net.Listener
	// rtmps and srt are the other sources (sources.go); nil when off.
	rtmps    *rtmp.Server
	rtmpsLn  net.Listener
	tlsCerts *certFiles
	srt      *srt.Server
	app      string // the RTMP application name of ONAIR_RTMP_URL ("live")
	root     string // media directory: <data dir>/media/shows
	signer   *signer
	// sessions makes and checks the viewers' playback session tokens.
	sessions *sessions
	thumbs   *thumbnailer
	vis      *visibility
	// mirror is set when the media store is not the working directory
	// (an S3 bucket): recordings and thumbnails are uploaded, and media
	// this node does not have is served from the store (see storage.go).
	mirror bool
	// presign, when ONAIR_STORAGE_PUBLIC_URL is set, makes URLs clients
	// fetch stored media with directly.
	presign store.Presigner
	// viewers counts who watches each live show (from playlist polls);
	// peaks keeps the most at once of the shows ingested here
	// (audience.go).
	viewers *viewers
	peaks   peaks
	// cluster is this node's part of a multi-node install (cluster.go);
	// nil without Redis.
	cluster *cluster

	// trackWait bounds how long a publication waits for a missing track.
	trackWait time.Duration
	// codecRefusals counts publications refused for their codec (RTMP);
	// codecRefusalsBy those of every protocol.
	codecRefusals   atomic.Uint64
	codecRefusalsBy map[string]*atomic.Uint64
	// partDuration is the LL-HLS part length (0: parts off).
	partDuration time.Duration
	// dvr is how far back live playlists reach (0: the short window).
	dvr time.Duration
	// waiting caps the LL-HLS requests held at once.
	waiting waiters
	// media holds the live edge of the shows ingested here (memcache.go).
	media *mediaCache
	// front is the server's front's state for tests (serve.go).
	front frontTest
	// minFree is the free space in bytes a publish needs on the media
	// disk (disk.go); 0 checks nothing.
	minFree uint64

	// ladder is the transcoding ladder of live video shows (ladder.go);
	// nil for none.
	ladder *ladderConfig

	// going writes the shows going live in batches (golive.go).
	going goingLive
	// hooks are other modules' readers of each publication (OnPublish).
	hooks publishHooks

	mu      sync.Mutex
	streams map[int64]*stream // the publisher of each show
	// leaving holds a show's publisher from the moment its connection is
	// gone until it has let go of the show's files.
	leaving map[int64]*stream
	probing map[*stream]struct{} // publishers still deciding their tracks
	lives   map[int64]*hls.Live  // live playlists' progress of the shows ingested here
	mediaMu sync.Mutex           // archive and removal of a show's media directory
	work    sync.WaitGroup       // archive and clean-up jobs
	loops   sync.WaitGroup       // the periodic loops (the peaks)
	ctx     context.Context
	cancel  context.CancelFunc
}

var (
	_ app.Provisioner  = (*Module)(nil)
	_ app.PublicRouter = (*Module)(nil)
	_ app.Runner       = (*Module)(nil)
	_ app.Configurer   = (*Module)(nil)
	_ app.Drainer      = (*Module)(nil)
)

// The module's settings (see docs/broadcasting.md for the admission
// rules they tune).
const (
	// SettingRTMPAddr is where the RTMP ingest server listens.
	SettingRTMPAddr = "ONAIR_RTMP_ADDR"
	// SettingRTMPAdmissionTimeout bounds handshake, connect and publish
	// (not the server's check of the key).
	SettingRTMPAdmissionTimeout = "ONAIR_RTMP_ADMISSION_TIMEOUT"
	// SettingRTMPMaxConns caps RTMP connections.
	SettingRTMPMaxConns = "ONAIR_RTMP_MAX_CONNS"
	// SettingRTMPMaxPending caps connections not yet publishing.
	SettingRTMPMaxPending = "ONAIR_RTMP_MAX_PENDING"
	// SettingRTMPMaxPendingPerIP caps them per client address.
	SettingRTMPMaxPendingPerIP = "ONAIR_RTMP_MAX_PENDING_PER_IP"
	// SettingRTMPMaxPublishersPerIP caps publishers per client address.
	SettingRTMPMaxPublishersPerIP = "ONAIR_RTMP_MAX_PUBLISHERS_PER_IP"
	// SettingRTMPKeyThrottle is the stream key throttle's window.
	SettingRTMPKeyThrottle = "ONAIR_RTMP_KEY_THROTTLE"
	// SettingRTMPTrackWait bounds the wait for a missing track.
	SettingRTMPTrackWait = "ONAIR_RTMP_TRACK_WAIT"
	// SettingStoragePublicURL is where clients reach the S3 store, for
	// redirects to presigned URLs.
	SettingStoragePublicURL = "ONAIR_STORAGE_PUBLIC_URL"
	// SettingHLSPartDuration is the LL-HLS part length.
	SettingHLSPartDuration = "ONAIR_HLS_PART_DURATION"
	// SettingHLSMaxBlocking caps the LL-HLS requests waiting at once.
	SettingHLSMaxBlocking = "ONAIR_HLS_MAX_BLOCKING"
	// SettingHLSMemory bounds the live media a node serves from memory.
	SettingHLSMemory = "ONAIR_HLS_MEMORY_MB"
	// SettingHLSMemoryPerShow bounds it per show.
	SettingHLSMemoryPerShow = "ONAIR_HLS_MEMORY_PER_SHOW_MB"
	// SettingDVRWindow is how far back a live show's playlists reach.
	SettingDVRWindow = "ONAIR_DVR_WINDOW"
)

func (*Module) Settings() []app.Setting {
	return append([]app.Setting{
		{Env: SettingRTMPAddr, Flag: "rtmp-addr", Default: ":1935", Help: "address the RTMP ingest server listens on", Parse: app.ParseAddr},
		{Env: SettingRTMPAdmissionTimeout, Flag: "rtmp-admission-timeout", Default: "5s",
			Help: "time a new RTMP connection has for handshake, connect and publish (the stream key check does not count)", Parse: parsePositiveDuration},
		{Env: SettingRTMPMaxConns, Flag: "rtmp-max-conns", Default: "512",
			Help: "RTMP connections, publishing or not", Parse: app.ParsePositiveInt},
		{Env: SettingRTMPMaxPending, Flag: "rtmp-max-pending", Default: "64",
			Help: "RTMP connections not yet publishing; when full, the oldest is dropped", Parse: app.ParsePositiveInt},
		{Env: SettingRTMPMaxPendingPerIP, Flag: "rtmp-max-pending-per-ip", Default: "8",
			Help: "RTMP connections not yet publishing from one client address; when full, its oldest is dropped", Parse: app.ParsePositiveInt},
		{Env: SettingRTMPMaxPublishersPerIP, Flag: "rtmp-max-publishers-per-ip", Default: "16",
			Help: "publishers from one client address", Parse: app.ParsePositiveInt},
		{Env: SettingRTMPKeyThrottle, Flag: "rtmp-key-throttle", Default: "1m",
			Help: "after 3 refused publishes of one stream key from one address within this window, the key is refused there for the window", Parse: parsePositiveDuration},
		{Env: SettingRTMPTrackWait, Flag: "rtmp-track-wait", Default: "5s",
			Help: "how long (in media time) a publication waits for a track onMetaData announced, or for the second track", Parse: parsePositiveDuration},
		{Env: SettingNodeURL, Flag: "node-url",
			Help: "with ONAIR_REDIS_URL: the base URL other nodes reach this node's HTTP server at (default: from ONAIR_HTTP_ADDR; docs/deploy.md)", Parse: parseNodeURL},
		{Env: SettingStoragePublicURL, Flag: "storage-public-url",
			Help: "base URL (http(s)://host:port) at which clients reach the s3 store of ONAIR_STORAGE_URL; when set, stored segments and images (never playlists) answer with a redirect to a presigned URL there (default: the node streams them)"},
		{Env: SettingHLSPartDuration, Flag: "hls-part-duration", Default: "200ms",
			Help: "length of the low-latency HLS partial segments, 100ms to 2s; 0 turns LL-HLS off", Parse: parsePartDuration},
		{Env: SettingDVRWindow, Flag: "dvr-window", Default: "4h",
			Help: "how far back a live show's playlists reach, so listeners can rewind (from its first segment up to this long); 0 keeps a short sliding window of the live edge", Parse: parseDVRWindow},
		{Env: SettingHLSMaxBlocking, Flag: "hls-max-blocking", Default: "4096",
			Help: "LL-HLS requests (blocking playlist reloads, hinted parts) a node holds at once; more get 503", Parse: app.ParsePositiveInt},
		{Env: SettingHLSMemory, Flag: "hls-memory-mb", Default: "256",
			Help: "MiB of live playlists, segments and parts (the live edge: the last 12 s of segments and their parts) a node serves from memory, for all the shows it ingests; LL-HLS parts are then in memory only. 0 serves them from disk, writing every part and playlist there", Parse: app.ParseNonNegativeInt},
		{Env: SettingHLSMemoryPerShow, Flag: "hls-memory-per-show-mb", Default: "32",
			Help: "MiB of that memory one show may hold; past it its oldest segments are served from disk", Parse: app.ParsePositiveInt},
		{Env: SettingTranscode, Flag: "transcode",
			Help: "rungs of the transcoding ladder every live video show gets, such as 1080p,720p,480p,360p,240p, each optionally with its video bit rate (360p:800k); rungs at or above the source's height are left out; empty: no ladder", Parse: parseTranscode},
		{Env: SettingTranscodeEncoder, Flag: "transcode-encoder", Default: "libx264",
			Help: "H.264 encoder of the ladder's rungs: libx264, h264_nvenc, h264_vaapi or h264_qsv (checked against ffmpeg -encoders at start)", Parse: parseTranscodeEncoder},
		{Env: SettingMediaMinFree, Flag: "media-min-free-mb", Default: "256",
			Help: "MiB that must be free on the disk of the media working directory for a publish to be accepted; 0 checks nothing", Parse: app.ParseNonNegativeInt},
	}, sourceSettings()...)
}

// parsePositiveDuration accepts a Go duration above zero.
func parsePositiveDuration(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Duration(0), errors.New("must be a positive duration such as 5s")
	}
	return d, nil
}

// parseDVRWindow accepts the DVR window: 0 (off) or a Go duration of a
// second to a day (below the short window, that window). A day of 2 s
// segments is 43200 playlist entries, about 3.5 MB of playlist per
// rendition.
func parseDVRWindow(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if v == "0" {
		d, err = 0, nil
	}
	if err != nil || d != 0 && (d < time.Second || d > 24*time.Hour) {
		return time.Duration(0), errors.New("must be 0 (off) or a duration from 1s to 24h such as 4h")
	}
	return d, nil
}

func (*Module) Name() string { return "live" }

func (m *Module) Provision(ctx context.Context, core *app.Core) error {
	m.core = core
	m.shows = shows.From(core)
	m.streams = map[int64]*stream{}
	m.leaving = map[int64]*stream{}
	m.probing = map[*stream]struct{}{}
	m.lives = map[int64]*hls.Live{}
	m.root = filepath.Join(core.Config.DataDir, "media", "shows")
	if err := os.MkdirAll(m.root, 0o755); err != nil {
		return fmt.Errorf("live: media directory: %w", err)
	}
	u, err := url.Parse(app.Get[string](core.Config, shows.SettingRTMPURL))
	if err != nil {
		return fmt.Errorf("live: ONAIR_RTMP_URL: %w", err)
	}
	m.app = strings.Trim(u.Path, "/")
	keyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	m.signer, err = loadSigner(keyCtx, core, filepath.Join(core.Config.DataDir, "media", "signing.key"))
	if err == nil {
		m.sessions, err = loadSessions(keyCtx, core)
	}
	cancel()
	if err != nil {
		return err
	}
	m.mirror = !isWorkingDir(core.Store, m.root)
	if public := app.Get[string](core.Config, SettingStoragePublicURL); public != "" {
		s3, ok := store.Base(core.Store).(*store.S3)
		if !ok {
			return fmt.Errorf("live: %s needs an s3:// ONAIR_STORAGE_URL", SettingStoragePublicURL)
		}
		if err := s3.SetPublicURL(public); err != nil {
			return fmt.Errorf("live: %s: %w", SettingStoragePublicURL, err)
		}
		m.presign = s3
	}
	m.vis = newVisibility(m.shows)
	// The sessions' context, from the kernel's (publishers may come
	// before Start ends); Stop cancels it.
	m.ctx, m.cancel = context.WithCancel(core.Context())
	if ffmpeg, err := exec.LookPath("ffmpeg"); err == nil {
		m.thumbs = newThumbnailer(ffmpeg, core.Log)
	} else {
		core.Log.Info("ffmpeg not on PATH: shows get a placeholder image and no animated preview")
	}
	m.shows.Views.SetMediaSigner(m.signURL)
	m.shows.Views.SetViewerTokens(m.ViewerToken)
	m.shows.Subscribe(m.onShowEvent)
	cfg := core.Config
	m.trackWait = app.Get[time.Duration](cfg, SettingRTMPTrackWait)
	m.partDuration = app.Get[time.Duration](cfg, SettingHLSPartDuration)
	m.dvr = app.Get[time.Duration](cfg, SettingDVRWindow)
	m.waiting.max = int64(app.Get[int](cfg, SettingHLSMaxBlocking))
	m.waiting.woken = newWokenHistogram()
	m.minFree = uint64(app.Get[int](cfg, SettingMediaMinFree)) << 20
	if m.ladder, err = newLadderConfig(app.Get[[]rungSpec](cfg, SettingTranscode), app.Get[string](cfg, SettingTranscodeEncoder)); err != nil {
		return err
	}
	m.media = newMediaCache(int64(app.Get[int](cfg, SettingHLSMemory))<<20, int64(app.Get[int](cfg, SettingHLSMemoryPerShow))<<20)
	m.rtmp = &rtmp.Server{
		Handler:              rtmp.HandlerFunc(m.publish),
		Logger:               core.Log,
		AdmissionTimeout:     app.Get[time.Duration](cfg, SettingRTMPAdmissionTimeout),
		MaxConnections:       app.Get[int](cfg, SettingRTMPMaxConns),
		MaxPending:           app.Get[int](cfg, SettingRTMPMaxPending),
		MaxPendingPerAddr:    app.Get[int](cfg, SettingRTMPMaxPendingPerIP),
		MaxPublishersPerAddr: app.Get[int](cfg, SettingRTMPMaxPublishersPerIP),
		KeyThrottle:          app.Get[time.Duration](cfg, SettingRTMPKeyThrottle),
	}
	if err := m.provisionSources(cfg); err != nil {
		return err
	}
	m.viewers = newViewers(viewerWindow)
	if core.Redis != nil {
		if m.cluster, err = newCluster(core, m.shows, m.viewers, m, core.Redis); err != nil {
			return err
		}
	}
	return m.registerMetrics(core.Metrics)
}

// registerMetrics adds the module's gauges to the kernel's registry.
func (m *Module) registerMetrics(reg prometheus.Registerer) error {
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_live_publishers", Help: "Publishers streaming a show to this node.",
		}, func() float64 { return float64(m.Streams()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_rtmp_connections", Help: "RTMP connections open on this node, publishing or not.",
		}, func() float64 { return float64(m.rtmp.Conns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_hls_viewers",
			Help: "Playback sessions (or, without one, client addresses and User-Agents) that fetched a live playlist from this node in the last 30 seconds.",
		}, func() float64 { return float64(m.viewers.total(time.Now())) }),
		admissionCollector{server: m.rtmp, codec: &m.codecRefusals},
		ingestCollector{sources: m.ingestSources, publishers: m.publishersByProtocol},
		blockingCollector{&m.waiting},
		m.waiting.woken,
		transcodeCollector{streams: m.streamList},
	} {
		if err := reg.Register(g); err != nil {
			return fmt.Errorf("live: metrics: %w", err)
		}
	}
	if m.cluster == nil {
		return nil
	}
	for _, g := range []prometheus.Collector{
		m.cluster.proxy.took,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "onair_live_leases", Help: "Live shows whose cluster lease this node holds (it ingests them).",
		}, func() float64 { return float64(m.cluster.held()) }),
		m.cluster.orphaned,
	} {
		if err := reg.Register(g); err != nil {
			return fmt.Errorf("live: metrics: %w", err)
		}
	}
	return nil
}

// Start listens for publishers on ONAIR_RTMP_ADDR and reconciles what a
// previous run left behind.
func (m *Module) Start(ctx context.Context) error {
	if m.thumbs != nil {
		// What a crash left; before any publisher (a CLI command
		// provisions the module beside a running server, and never
		// starts it).
		m.thumbs.sweep(m.root)
	}
	addr := app.Get[string](m.core.Config, SettingRTMPAddr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("live: listen on ONAIR_RTMP_ADDR %s: %w", addr, err)
	}
	m.ln = ln
	if m.cluster != nil {
		if err := m.cluster.start(ctx); err != nil {
			ln.Close()
			return err
		}
	}
	go func() {
		if err := m.rtmp.Serve(ln); err != nil && !errors.Is(err, rtmp.ErrServerClosed) {
			m.core.Log.Error("rtmp server stopped", "err", err)
		}
	}()
	m.core.Log.Info("rtmp ingest listening", "addr", ln.Addr().String(), "stream_url", app.Get[string](m.core.Config, shows.SettingRTMPURL))
	if err := m.startSources(); err != nil {
		return err
	}
	if m.thumbs != nil {
		m.thumbs.start(m.ctx)
	}
	m.loops.Add(1)
	go func() { defer m.loops.Done(); app.Every(m.ctx, peakEvery, m.samplePeaks) }()
	if err := m.reconcile(ctx); err != nil {
		m.core.Log.Error("live: reconcile after restart", "err", err)
	}
	return nil
}

// Drain stops accepting RTMP connections when the process begins to
// stop: an encoder that reconnects now finds another node (or this one
// after its restart), while the publishers streaming carry on until Stop.
func (m *Module) Drain() {
	if m.rtmp != nil {
		m.rtmp.CloseListeners()
	}
	m.drainSources()
}

// Stop closes the RTMP server (publishers are cut off and their shows wait
// in the reconnect window) and waits for archive jobs.
func (m *Module) Stop(ctx context.Context) error {
	if m.rtmp != nil {
		m.rtmp.Close()
	}
	m.closeSources()
	done := make(chan struct{})
	go func() {
		m.mu.Lock()
		list := make([]*stream, 0, len(m.streams)+len(m.leaving))
		for _, s := range m.streams {
			list = append(list, s)
		}
		for _, s := range m.leaving {
			list = append(list, s)
		}
		m.mu.Unlock()
		for _, s := range list {
			<-s.closed
		}
		m.work.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	// The rest is bounded too: a loop stuck on a call that ignores its
	// context must not hold the process past its grace (SIGTERM), and
	// the error says what was still running.
	rest := make(chan struct{})
	go func() {
		if m.cluster != nil {
			m.cluster.stop()
		}
		m.cancel()
		m.loops.Wait()
		if m.thumbs != nil {
			m.thumbs.wait()
		}
		close(rest)
	}()
	select {
	case <-rest:
		return nil
	case <-ctx.Done():
	}
	// Past the grace (the publications took it all, or what follows
	// hangs): the cluster's lease release and the loops told to stop
	// just now get stopGrace more.
	select {
	case <-rest:
		return nil
	case <-time.After(stopGrace):
		m.cancel()
		return fmt.Errorf("live: stop: the cluster, the periodic loops or the thumbnail job still running %s after the grace: %w", stopGrace, ctx.Err())
	}
}

// stopGrace is how long Stop still waits, once its context ended, for
// the work it only then told to stop. (A variable for the tests.)
var stopGrace = 5 * time.Second

// showsCallWait bounds one call the module makes to the shows service on
// its own behalf (a publisher left, a show archived or gone live).
const showsCallWait = 30 * time.Second

// opContext is the context of a piece of the module's own work, owned by
// its lifecycle: it ends when the module stops, or after d.
func (m *Module) opContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, d)
}

// RTMPAddr is the address the ingest server listens on (tests use it).
func (m *Module) RTMPAddr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// PublicRoutes serve the media of shows.
func (m *Module) PublicRoutes(r fiber.Router) {
	r.Options("/media/shows/:id/*", preflight)
	r.Get("/media/shows/:id/t/:token/:file", m.serveSigned)
	r.Get("/media/shows/:id/:file", m.servePublic)
}

// showDir is where a show's media lives.
func (m *Module) showDir(id int64) string { return filepath.Join(m.root, fmt.Sprint(id)) }

// mediaURL is the unsigned public URL of a show's media file.
func (m *Module) mediaURL(id int64, file string) string {
	return fmt.Sprintf("%s/media/shows/%d/%s", m.core.Config.PublicURL, id, file)
}

// Streams counts the publishers connected now.
func (m *Module) Streams() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.streams)
}

// Wait blocks until pending archive and clean-up jobs are done (tests).
func (m *Module) Wait() { m.work.Wait() }
