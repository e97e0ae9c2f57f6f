package restream

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onair/onair/modules/live"
	"github.com/onair/onair/modules/live/amf0"
	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/live/streamcore"
	"github.com/onair/onair/modules/shows"
	"github.com/onair/onair/modules/webhooks"
)

// States of a destination during a show, as health reports them.
const (
	StateConnecting = "connecting"
	StateConnected  = "connected"
	StateRetrying   = "retrying"
	StateFailed     = "failed"
)

// States lists them in the order the metrics do.
var States = []string{StateConnecting, StateConnected, StateRetrying, StateFailed}

// Timing of the pushes.
const (
	// maxBackoff caps the pause between two attempts.
	maxBackoff = 30 * time.Second
	// stable is how long a connection must last for the pause to start
	// over from the first.
	stable = 30 * time.Second
	// refusalsToFail is how many refusals in a row (the destination
	// answered, and refused the stream: a wrong key) make the
	// destination failed, not retried until the next publication or an
	// edit.
	refusalsToFail = 3
	// pushQueue is the units a pusher may have waiting (about 6 s at 30
	// fps with audio); past it the core skips it to the next keyframe.
	pushQueue = 512
)

// publication is a show this node ingests, with its pushers.
type publication struct {
	showID, userID int64
	stream         *streamcore.Stream
	syncMu         sync.Mutex // one sync at a time
	// Under Module.mu.
	pushers map[int64]*pusher
	ended   bool
}

// published is the live module's OnPublish hook: the publication gets a
// watcher (which forgets it when it ends) and, from another goroutine
// since it reads the database, a pusher per enabled destination.
func (m *Module) published(p live.Publication) {
	pub := &publication{showID: p.ShowID, userID: p.UserID, stream: p.Stream, pushers: map[int64]*pusher{}}
	m.mu.Lock()
	m.pubs[p.ShowID] = pub
	m.mu.Unlock()
	p.Stream.AddReader(&watcher{m: m, pub: pub}, streamcore.ReaderOptions{Name: "restream-watch", Queue: 1})
	go m.sync(pub)
}

// changed follows an edit of a user's destinations in the shows of theirs
// that are live here.
func (m *Module) changed(userID int64) {
	m.mu.Lock()
	var list []*publication
	for _, p := range m.pubs {
		if p.userID == userID {
			list = append(list, p)
		}
	}
	m.mu.Unlock()
	for _, p := range list {
		go m.sync(p)
	}
}

// sync makes the publication's pushers those of the user's enabled
// destinations now: new ones start, edited ones start over, removed or
// disabled ones stop.
func (m *Module) sync(pub *publication) {
	pub.syncMu.Lock()
	defer pub.syncMu.Unlock()
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	list, err := OfUser(ctx, m.db, pub.userID)
	cancel()
	if err != nil {
		m.log.Error("restream: read the destinations", "show", pub.showID, "err", err)
		return
	}
	want := map[int64]*Destination{}
	for i := range list {
		if list[i].Enabled {
			want[list[i].ID] = &list[i]
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if pub.ended || m.ctx.Err() != nil {
		return
	}
	for id, ps := range pub.pushers {
		if d := want[id]; d == nil || d.Key != ps.sealed || d.Prefix != ps.prefix || d.Name != ps.name {
			ps.halt()
			delete(pub.pushers, id)
		}
	}
	for id, d := range want {
		if pub.pushers[id] != nil {
			continue
		}
		key, err := m.keys.open(d.UserID, d.Key)
		if err != nil {
			m.log.Error("restream: destination key", "destination", d.ID, "err", err)
			continue
		}
		ps := m.newPusher(pub, d, key)
		pub.pushers[id] = ps
		pub.stream.AddReader(ps, streamcore.ReaderOptions{Name: "restream", Queue: pushQueue})
	}
}

// watcher reads a publication only to learn when it ends.
type watcher struct {
	m   *Module
	pub *publication
}

func (*watcher) Tracks(streamcore.Tracks) error { return nil }
func (*watcher) Unit(*streamcore.Unit) error    { return nil }

// Close forgets the publication and stops its pushers (which the core
// closes too).
func (w *watcher) Close() {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	w.pub.ended = true
	if w.m.pubs[w.pub.showID] == w.pub {
		delete(w.m.pubs, w.pub.showID)
	}
	for _, ps := range w.pub.pushers {
		ps.halt()
	}
}

// pusher pushes one publication to one destination: a reader of the core
// that writes each unit to the current connection, and a goroutine that
// keeps a connection up (run). Units that come while there is none are
// dropped; a new connection starts at a keyframe.
type pusher struct {
	m      *Module
	showID int64
	id     int64
	name   string
	prefix string
	sealed string
	// url carries the stream key: never logged, never in an error.
	url, key string

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	rate     rate

	mu     sync.Mutex
	state  string
	err    string
	client *rtmp.Client
	gen    int // connections made

	// The reader's goroutine only.
	tracks  streamcore.Tracks
	sentGen int
	base    int64
	buf     []byte
}

func (m *Module) newPusher(pub *publication, d *Destination, key string) *pusher {
	ps := &pusher{m: m, showID: pub.showID, id: d.ID, name: d.Name, prefix: d.Prefix, sealed: d.Key,
		url: d.Prefix + key, key: key, stop: make(chan struct{}), done: make(chan struct{}), state: StateConnecting}
	go ps.run()
	return ps
}

// errStopped detaches a pusher from the core.
var errStopped = errors.New("restream: destination stopped")

func (ps *pusher) halt() { ps.stopOnce.Do(func() { close(ps.stop) }) }

func (ps *pusher) stopped() bool {
	select {
	case <-ps.stop:
		return true
	default:
		return false
	}
}

func (ps *pusher) Tracks(t streamcore.Tracks) error {
	changed := ps.tracks != t
	ps.tracks = t
	if c, gen := ps.current(); c != nil && gen == ps.sentGen && changed {
		// A new configuration mid-stream: its headers go out now.
		ps.headers(c)
	}
	return nil
}

func (ps *pusher) Unit(u *streamcore.Unit) error {
	if ps.stopped() {
		return errStopped
	}
	c, gen := ps.current()
	if c == nil {
		return nil
	}
	if gen != ps.sentGen {
		// A new connection starts with the headers, at a keyframe.
		if ps.tracks.Video != nil && !(u.Video && u.Key) {
			return nil
		}
		if ps.headers(c) != nil {
			return nil
		}
		ps.sentGen, ps.base = gen, u.DTS
	}
	ts := max(u.DTS-ps.base, 0)
	var err error
	if u.Video {
		ps.buf = videoTag(ps.buf[:0], u)
		err = c.WriteVideo(uint32(ts), ps.buf)
	} else {
		ps.buf = audioTag(ps.buf[:0], u)
		err = c.WriteAudio(uint32(ts), ps.buf)
	}
	if err == nil {
		ps.rate.add(len(ps.buf), time.Now())
		ps.m.metrics.bytes.Add(float64(len(ps.buf)))
	}
	return nil // a failed write ends the connection; run starts another
}

// headers sends onMetaData and the sequence headers of the tracks.
func (ps *pusher) headers(c *rtmp.Client) error {
	meta := amf0.Object{{Key: "encoder", Value: "OnAir"}}
	if ps.tracks.Video != nil {
		meta = append(meta, amf0.Property{Key: "videocodecid", Value: 7.0})
	}
	if ps.tracks.Audio != nil {
		meta = append(meta, amf0.Property{Key: "audiocodecid", Value: 10.0},
			amf0.Property{Key: "audiosamplerate", Value: float64(ps.tracks.Audio.SampleRate)})
	}
	if err := c.WriteMetadata(meta); err != nil {
		return err
	}
	if v := ps.tracks.Video; v != nil {
		if err := c.WriteVideo(0, avcSequenceHeader(v)); err != nil {
			return err
		}
	}
	if a := ps.tracks.Audio; a != nil {
		if err := c.WriteAudio(0, aacSequenceHeader(a)); err != nil {
			return err
		}
	}
	return nil
}

// Close is the core's: the publication ended (or the pusher was
// detached).
func (ps *pusher) Close() { ps.halt() }

func (ps *pusher) current() (*rtmp.Client, int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.client, ps.gen
}

func (ps *pusher) set(state, msg string, c *rtmp.Client) {
	ps.mu.Lock()
	ps.state, ps.err = state, msg
	if c != nil {
		ps.gen++
	}
	ps.client = c
	ps.mu.Unlock()
}

// run keeps a connection to the destination while the publication lasts:
// after a failure it waits (1 s, doubling up to 30 s, back to 1 s after a
// connection that lasted) and tries again.
func (ps *pusher) run() {
	defer close(ps.done)
	ps.m.mu.Lock()
	first := ps.m.backoff
	ps.m.mu.Unlock()
	pause, refusals := first, 0
	log := ps.m.log.With("show", ps.showID, "destination", ps.id)
	ctx, cancel := context.WithCancel(ps.m.ctx)
	defer cancel()
	go func() {
		select {
		case <-ps.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for attempt := 0; ; attempt++ {
		c, err := rtmp.Publish(ctx, ps.url, rtmp.ClientOptions{Dialer: ps.m.dialer(), TLS: ps.m.tlsConfig()})
		if ctx.Err() != nil {
			if c != nil {
				c.Close()
			}
			ps.set(ps.state, ps.err, nil)
			return
		}
		var since time.Time
		if err == nil {
			refusals = 0
			ps.set(StateConnected, "", c)
			ps.m.metrics.connects.WithLabelValues("connected").Inc()
			log.Info("restream connected", "name", ps.name)
			since = time.Now()
			select {
			case <-c.Done():
				err = c.Err()
			case <-ctx.Done():
				c.Close()
				ps.set(StateConnected, "", nil)
				return
			}
			if time.Since(since) >= stable {
				pause = first
			}
		}
		msg := ps.words(err)
		var refused *rtmp.PublishError
		switch {
		case errors.Is(err, errBlocked):
			refusals = refusalsToFail
		case errors.As(err, &refused):
			refusals++
		}
		if refusals >= refusalsToFail {
			ps.set(StateFailed, msg, nil)
			ps.m.metrics.connects.WithLabelValues("refused").Inc()
			log.Warn("restream failed; not retried during this publication", "name", ps.name, "err", msg)
			<-ctx.Done()
			return
		}
		ps.set(StateRetrying, msg, nil)
		if since.IsZero() {
			ps.m.metrics.connects.WithLabelValues("error").Inc()
		}
		log.Warn("restream interrupted; retrying", "name", ps.name, "err", msg, "in", pause.String())
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
		pause = min(pause*2, maxBackoff)
	}
}

// words is err for the health and the log: the key never appears.
func (ps *pusher) words(err error) string {
	if err == nil {
		return "the destination closed the connection"
	}
	msg := err.Error()
	if ps.key != "" {
		msg = strings.ReplaceAll(msg, ps.key, Mask)
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

// errBlocked is a destination address the private-address guard refused.
var errBlocked = errors.New("destination refused: private address")

// dialer connects to destinations; unless ONAIR_WEBHOOK_ALLOW_PRIVATE it
// refuses, after resolution, every address a webhook may not reach.
func (m *Module) dialer() *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !m.allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !webhooks.PublicAddress(ap.Addr()) {
				return errBlocked
			}
			return nil
		}
	}
	return d
}

// AddHealth lists the destinations of a show ingested here.
func (m *Module) AddHealth(showID int64, h *shows.Health) {
	m.mu.Lock()
	pub := m.pubs[showID]
	var list []*pusher
	if pub != nil {
		for _, ps := range pub.pushers {
			list = append(list, ps)
		}
	}
	m.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	now := time.Now()
	for _, ps := range list {
		ps.mu.Lock()
		dh := shows.DestinationHealth{ID: ps.id, Name: ps.name, State: ps.state}
		if ps.err != "" {
			e := ps.err
			dh.Error = &e
		}
		ps.mu.Unlock()
		dh.Bitrate = ps.rate.kbps(now)
		h.Destinations = append(h.Destinations, dh)
	}
}

// rate measures the bytes sent over the last rateWindow seconds, in
// one-second buckets.
type rate struct {
	mu      sync.Mutex
	buckets [rateWindow + 1]struct {
		sec   int64
		bytes int
	}
}

const rateWindow = 5

func (r *rate) add(n int, now time.Time) {
	sec := now.Unix()
	r.mu.Lock()
	b := &r.buckets[sec%int64(len(r.buckets))]
	if b.sec != sec {
		b.sec, b.bytes = sec, 0
	}
	b.bytes += n
	r.mu.Unlock()
}

// kbps is the bitrate over the last whole seconds.
func (r *rate) kbps(now time.Time) int {
	sec := now.Unix()
	total := 0
	r.mu.Lock()
	for _, b := range r.buckets {
		if b.sec < sec && b.sec >= sec-rateWindow {
			total += b.bytes
		}
	}
	r.mu.Unlock()
	return total * 8 / 1000 / rateWindow
}
