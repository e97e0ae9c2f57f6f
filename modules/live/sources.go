package live

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/live/srt"
	"github.com/onair/onair/modules/live/streamcore"
	"github.com/onair/onair/modules/shows"
)

// The sources of the stream core besides plain RTMP: RTMP over TLS (the
// same server on a TLS listener) and SRT (MPEG-TS, srt/). Each publication
// becomes a stream (ingest.go) whatever carried it, so everything made of
// it (LL-HLS, the archive, thumbnails, health, cluster ownership and
// takeover, the reconnect window) works the same; the stream remembers
// its protocol for the health and the metrics.

// Protocols, as health and metrics name them.
const (
	protoRTMP  = "rtmp"
	protoRTMPS = "rtmps"
	protoSRT   = "srt"
)

// The sources' settings.
const (
	// SettingRTMPSAddr is where the RTMPS listener listens ("" off).
	SettingRTMPSAddr = "ONAIR_RTMPS_ADDR"
	// SettingTLSCert and SettingTLSKey are the RTMPS certificate and key
	// (PEM files, reloaded when they change).
	SettingTLSCert = "ONAIR_TLS_CERT"
	SettingTLSKey  = "ONAIR_TLS_KEY"
	// SettingSRTAddr is where the SRT listener listens ("" off).
	SettingSRTAddr = "ONAIR_SRT_ADDR"
	// SettingSRTPassphrase, when set, is required of every SRT caller.
	SettingSRTPassphrase = "ONAIR_SRT_PASSPHRASE"
	// SettingSRTLatency is the least SRT receive latency.
	SettingSRTLatency = "ONAIR_SRT_LATENCY"
)

func sourceSettings() []app.Setting {
	return []app.Setting{
		{Env: SettingRTMPSAddr, Flag: "rtmps-addr",
			Help: "address the RTMPS (RTMP over TLS) ingest listens on, with ONAIR_TLS_CERT and ONAIR_TLS_KEY; empty: no RTMPS", Parse: app.ParseOptionalAddr},
		{Env: SettingTLSCert, Flag: "tls-cert",
			Help: "PEM certificate (chain) of the RTMPS listener; reloaded when the file changes"},
		{Env: SettingTLSKey, Flag: "tls-key",
			Help: "PEM private key of ONAIR_TLS_CERT; reloaded when the file changes"},
		{Env: SettingSRTAddr, Flag: "srt-addr",
			Help: "UDP address the SRT ingest listens on (MPEG-TS, H.264 and AAC; the stream key in the streamid); empty: no SRT", Parse: app.ParseOptionalAddr},
		{Env: SettingSRTPassphrase, Flag: "srt-passphrase",
			Help: "passphrase (10 to 79 characters) every SRT caller must give (AES encryption); empty: callers must not encrypt", Parse: parsePassphrase},
		{Env: SettingSRTLatency, Flag: "srt-latency", Default: "120ms",
			Help: "least SRT receive latency; a caller asking for more (its latency option) gets it", Parse: parseSRTLatency},
	}
}

func parsePassphrase(v string) (any, error) {
	if v != "" && (len(v) < 10 || len(v) > 79) {
		return "", errors.New("must be 10 to 79 characters (SRT's limits)")
	}
	return v, nil
}

func parseSRTLatency(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 20*time.Millisecond || d > 10*time.Second {
		return time.Duration(0), errors.New("must be a duration from 20ms to 10s, such as 120ms")
	}
	return d, nil
}

// provisionSources makes the RTMPS and SRT servers the settings ask for.
func (m *Module) provisionSources(cfg *app.Config) error {
	m.codecRefusalsBy = map[string]*atomic.Uint64{protoRTMP: &m.codecRefusals, protoRTMPS: {}, protoSRT: {}}
	if addr := app.Get[string](cfg, SettingRTMPSAddr); addr != "" {
		cert, key := app.Get[string](cfg, SettingTLSCert), app.Get[string](cfg, SettingTLSKey)
		if cert == "" || key == "" {
			return fmt.Errorf("live: %s needs %s and %s", SettingRTMPSAddr, SettingTLSCert, SettingTLSKey)
		}
		certs, err := newCertFiles(cert, key, m.core.Log)
		if err != nil {
			return fmt.Errorf("live: %s: %w", SettingTLSCert, err)
		}
		m.tlsCerts = certs
		m.rtmps = m.newRTMPServer(cfg, protoRTMPS)
	}
	if app.Get[string](cfg, SettingSRTAddr) != "" {
		m.srt = &srt.Server{
			Handler:              srt.HandlerFunc(m.publishSRT),
			Logger:               m.core.Log,
			Passphrase:           app.Get[string](cfg, SettingSRTPassphrase),
			Latency:              app.Get[time.Duration](cfg, SettingSRTLatency),
			AdmissionTimeout:     app.Get[time.Duration](cfg, SettingRTMPAdmissionTimeout),
			MaxConnections:       app.Get[int](cfg, SettingRTMPMaxConns),
			MaxPending:           app.Get[int](cfg, SettingRTMPMaxPending),
			MaxPendingPerAddr:    app.Get[int](cfg, SettingRTMPMaxPendingPerIP),
			MaxPublishersPerAddr: app.Get[int](cfg, SettingRTMPMaxPublishersPerIP),
			KeyThrottle:          app.Get[time.Duration](cfg, SettingRTMPKeyThrottle),
		}
	}
	m.shows.Views.SetIngest(m.ingestURLs)
	return nil
}

// newRTMPServer is an RTMP server with the admission settings, whose
// publications are marked with proto.
func (m *Module) newRTMPServer(cfg *app.Config, proto string) *rtmp.Server {
	return &rtmp.Server{
		Handler: rtmp.HandlerFunc(func(ctx context.Context, req rtmp.PublishRequest) (rtmp.Sink, error) {
			return m.publishOver(ctx, proto, req)
		}),
		Logger:               m.core.Log,
		AdmissionTimeout:     app.Get[time.Duration](cfg, SettingRTMPAdmissionTimeout),
		MaxConnections:       app.Get[int](cfg, SettingRTMPMaxConns),
		MaxPending:           app.Get[int](cfg, SettingRTMPMaxPending),
		MaxPendingPerAddr:    app.Get[int](cfg, SettingRTMPMaxPendingPerIP),
		MaxPublishersPerAddr: app.Get[int](cfg, SettingRTMPMaxPublishersPerIP),
		KeyThrottle:          app.Get[time.Duration](cfg, SettingRTMPKeyThrottle),
	}
}

// startSources listens for RTMPS and SRT publishers.
func (m *Module) startSources() error {
	cfg := m.core.Config
	if m.rtmps != nil {
		addr := app.Get[string](cfg, SettingRTMPSAddr)
		ln, err := tls.Listen("tcp", addr, &tls.Config{GetCertificate: m.tlsCerts.get, MinVersion: tls.VersionTLS12})
		if err != nil {
			return fmt.Errorf("live: listen on %s %s: %w", SettingRTMPSAddr, addr, err)
		}
		m.rtmpsLn = ln
		go func() {
			if err := m.rtmps.Serve(ln); err != nil && !errors.Is(err, rtmp.ErrServerClosed) {
				m.core.Log.Error("rtmps server stopped", "err", err)
			}
		}()
		m.core.Log.Info("rtmps ingest listening", "addr", ln.Addr().String())
	}
	if m.srt != nil {
		addr := app.Get[string](cfg, SettingSRTAddr)
		if err := m.srt.Listen(addr); err != nil {
			return fmt.Errorf("live: listen on %s %s: %w", SettingSRTAddr, addr, err)
		}
		go func() {
			if err := m.srt.Serve(); err != nil && !errors.Is(err, srt.ErrServerClosed) {
				m.core.Log.Error("srt server stopped", "err", err)
			}
		}()
		m.core.Log.Info("srt ingest listening", "addr", m.srt.Addr().String())
	}
	return nil
}

// drainSources stops admitting RTMPS and SRT publishers.
func (m *Module) drainSources() {
	if m.rtmps != nil {
		m.rtmps.CloseListeners()
	}
	if m.srt != nil {
		m.srt.CloseListener()
	}
}

// closeSources cuts the RTMPS and SRT publishers off.
func (m *Module) closeSources() {
	if m.rtmps != nil {
		m.rtmps.Close()
	}
	if m.srt != nil {
		m.srt.Close()
	}
}

// RTMPSAddr and SRTAddr are the listeners' addresses ("" when off).
func (m *Module) RTMPSAddr() string {
	if m.rtmpsLn == nil {
		return ""
	}
	return m.rtmpsLn.Addr().String()
}

func (m *Module) SRTAddr() string {
	if m.srt == nil || m.srt.Addr() == nil {
		return ""
	}
	return m.srt.Addr().String()
}

// ingestURLs are the addresses a broadcaster may publish key to: the
// RTMP URL (ONAIR_RTMP_URL), and on its host the RTMPS and SRT listeners'
// ports. The SRT URL carries the key as its bare streamid: ffmpeg, OBS
// and GStreamer take the streamid from the URL as it is, without decoding
// it, so the access control form (#!::r=KEY,m=publish, also accepted)
// would not survive the URL's escaping.
func (m *Module) ingestURLs(key string) shows.Ingest {
	base := app.Get[string](m.core.Config, shows.SettingRTMPURL)
	in := shows.Ingest{RTMP: base}
	u, err := url.Parse(base)
	if err != nil {
		return in
	}
	host := u.Hostname()
	if addr := m.listenPort(m.RTMPSAddr(), SettingRTMPSAddr); addr != "" {
		in.RTMPS = (&url.URL{Scheme: "rtmps", Host: net.JoinHostPort(host, addr), Path: u.Path}).String()
	}
	if addr := m.listenPort(m.SRTAddr(), SettingSRTAddr); addr != "" {
		in.SRT = (&url.URL{Scheme: "srt", Host: net.JoinHostPort(host, addr),
			RawQuery: "streamid=" + url.QueryEscape(key)}).String()
	}
	return in
}

// listenPort is the port of a configured listener: the one it listens on
// once started (a :0 setting picks one), else the setting's.
func (m *Module) listenPort(live, setting string) string {
	addr := live
	if addr == "" {
		addr = app.Get[string](m.core.Config, setting)
	}
	if addr == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		return ""
	}
	return port
}

// publishSRT is the srt.Handler: the same check of the key as RTMP's,
// then a stream the SRT server feeds with units.
func (m *Module) publishSRT(ctx context.Context, req srt.PublishRequest) (srt.Sink, error) {
	s, err := m.newStream(ctx, protoSRT, rtmp.PublishRequest{Key: req.Key, RemoteAddr: req.RemoteAddr, Disconnect: req.Disconnect})
	if err != nil {
		var se *rtmp.StatusError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: %v", srt.ErrUnavailable, err)
		}
		if errors.Is(err, rtmp.ErrUnauthorized) {
			return nil, fmt.Errorf("%w: %v", srt.ErrUnauthorized, err)
		}
		return nil, err
	}
	s.link = req.Link
	return srtSink{s}, nil
}

// srtSink feeds a stream from the SRT server's demuxer.
type srtSink struct{ *stream }

// Tracks announces the program's tracks to the core, as onMetaData does
// for RTMP (H.264 is FLV codec 7, AAC sound format 10), so it waits for
// both and no longer.
func (s srtSink) Tracks(video, audio bool) error {
	meta := map[string]any{}
	if video {
		meta["videocodecid"] = 7.0
	}
	if audio {
		meta["audiocodecid"] = 10.0
	}
	s.Metadata(meta)
	return s.err
}

// Write hands a unit to the core; an audio-only show's video is counted
// and dropped.
func (s srtSink) Write(u streamcore.Unit) error {
	if s.err != nil {
		return s.err
	}
	var err error
	if u.Video && s.core.AudioOnly() {
		err = s.core.IgnoreVideo(u.DTS, u.Size, u.At)
	} else {
		err = s.core.Write(u)
	}
	if err != nil {
		s.err = s.refuse(err)
	}
	return s.err
}

// Inline is true once the core has decided the tracks (and claimed the
// show): from then on Write only queues each unit for the core's readers,
// which drop what a slow one cannot take, so the SRT server may call it
// on its socket's goroutine.
func (s srtSink) Inline() bool { return s.err == nil && s.core.Decided() }

var _ srt.InlineSink = srtSink{}

// certFiles serves the RTMPS certificate, loading the files again when
// they change (checked at most once a second, at a handshake): a renewed
// certificate takes effect without a restart. A pair that fails to load
// keeps the previous one, and the failure is logged once.
type certFiles struct {
	certPath, keyPath string
	log               *slog.Logger
	mu                sync.Mutex
	cert              *tls.Certificate
	certMod, keyMod   time.Time
	checked           time.Time
	failed            string
}

func newCertFiles(certPath, keyPath string, log *slog.Logger) (*certFiles, error) {
	c := &certFiles{certPath: certPath, keyPath: keyPath, log: log}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certFiles) load() error {
	ci, err := os.Stat(c.certPath)
	if err != nil {
		return err
	}
	ki, err := os.Stat(c.keyPath)
	if err != nil {
		return err
	}
	if c.cert != nil && ci.ModTime().Equal(c.certMod) && ki.ModTime().Equal(c.keyMod) {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(c.certPath, c.keyPath)
	if err != nil {
		return err
	}
	c.cert, c.certMod, c.keyMod = &pair, ci.ModTime(), ki.ModTime()
	return nil
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= time.Second {
		c.checked = now
		if err := c.load(); err != nil && err.Error() != c.failed {
			c.failed = err.Error()
			c.log.Error("live: reload the RTMPS certificate; the previous one is kept", "err", err)
		} else if err == nil && c.failed != "" {
			c.failed = ""
			c.log.Info("live: RTMPS certificate reloaded")
		}
	}
	return c.cert, nil
}

// The admission counters and gauges of every source, by protocol.
var (
	descIngestConns = prometheus.NewDesc("onair_ingest_connections",
		"Ingest connections open on this node, publishing or not, by protocol (rtmp, rtmps, srt).", []string{"protocol"}, nil)
	descIngestPublishers = prometheus.NewDesc("onair_ingest_publishers",
		"Publishers streaming a show to this node, by protocol.", []string{"protocol"}, nil)
	descIngestRefused = prometheus.NewDesc("onair_ingest_refused_total",
		"Ingest connections or publishes refused, by protocol and reason: full, publishers_per_ip, codec.",
		[]string{"protocol", "reason"}, nil)
	descIngestEvicted = prometheus.NewDesc("onair_ingest_evicted_total",
		"Ingest connections not yet publishing dropped to admit newer ones, by protocol.", []string{"protocol"}, nil)
	descIngestTimedOut = prometheus.NewDesc("onair_ingest_admission_timeouts_total",
		"Ingest connections closed for not publishing within ONAIR_RTMP_ADMISSION_TIMEOUT, by protocol.", []string{"protocol"}, nil)
	descIngestThrottled = prometheus.NewDesc("onair_ingest_throttled_total",
		"Publishes refused by the stream key throttle, by protocol.", []string{"protocol"}, nil)
)

// ingestCollector exposes the sources' admission counters by protocol.
// What it reads is given in wiring (Module.ingestSources and
// Module.publishersByProtocol), so it holds no pointer to the module.
type ingestCollector struct {
	sources    func() []ingestSource
	publishers func() map[string]int
}

// ingestSource is one listener's figures for ingestCollector.
type ingestSource struct {
	proto string
	conns func() int
	stats func() rtmp.Stats
	codec *atomic.Uint64 // publishes refused for their codecs
}

// ingestSources lists the configured listeners for ingestCollector.
func (m *Module) ingestSources() []ingestSource {
	sources := []ingestSource{{protoRTMP, m.rtmp.Conns, m.rtmp.Stats, m.codecRefusalsBy[protoRTMP]}}
	if m.rtmps != nil {
		sources = append(sources, ingestSource{protoRTMPS, m.rtmps.Conns, m.rtmps.Stats, m.codecRefusalsBy[protoRTMPS]})
	}
	if m.srt != nil {
		sources = append(sources, ingestSource{protoSRT, m.srt.Conns, m.srt.Stats, m.codecRefusalsBy[protoSRT]})
	}
	return sources
}

// publishersByProtocol counts this node's publishing streams by protocol.
func (m *Module) publishersByProtocol() map[string]int {
	publishers := map[string]int{}
	m.mu.Lock()
	for _, s := range m.streams {
		publishers[s.protocol]++
	}
	m.mu.Unlock()
	return publishers
}

func (c ingestCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIngestConns, descIngestPublishers, descIngestRefused,
		descIngestEvicted, descIngestTimedOut, descIngestThrottled} {
		ch <- d
	}
}

func (c ingestCollector) Collect(ch chan<- prometheus.Metric) {
	sources, publishers := c.sources(), c.publishers()
	for _, src := range sources {
		st := src.stats()
		gauge := func(d *prometheus.Desc, v int) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), src.proto)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{src.proto}, labels...)...)
		}
		gauge(descIngestConns, src.conns())
		gauge(descIngestPublishers, publishers[src.proto])
		counter(descIngestRefused, st.RefusedFull, "full")
		counter(descIngestRefused, st.RefusedPublishers, "publishers_per_ip")
		counter(descIngestRefused, src.codec.Load(), "codec")
		counter(descIngestEvicted, st.Evicted)
		counter(descIngestTimedOut, st.TimedOut)
		counter(descIngestThrottled, st.Throttled)
	}
}
