package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/live/rtmp"
	"github.com/onair/onair/modules/shows"
)

// The cluster is what the live module shares with the other nodes of one
// install through Redis (docs/deploy.md): it exists only when
// ONAIR_REDIS_URL is set, and a single node without Redis never builds one.
//
//   - Node registry: every node has a random id and registers its internal
//     base URL (ONAIR_NODE_URL) at {prefix}node:{id} with a TTL, refreshed
//     by a heartbeat, removed at Stop.
//   - Live lease: the node ingesting a show holds {prefix}live:owner:{show}
//     (the node id, with a TTL renewed while the stream lives). A publisher
//     of a show owned elsewhere asks the owner, on the owner's pub/sub
//     channel, to let go ("replace"), and waits for the lease.
//   - Proxy: a node asked for the live media of a show owned by another
//     node forwards the request to the owner (proxy.go).
//   - Janitor: every node looks for live shows whose owner vanished (no
//     lease for longer than a lease period) and starts their reconnect
//     window; the shows janitor ends it; the archive then runs once, on the
//     node that wins {prefix}live:archiving:{show}.
//   - Redis away: each node keeps the shows it ingests, takes a publisher
//     on the database's word (acquireAlone), and writes its registration
//     and leases again at the first heartbeat after Redis returns
//     (docs/operations.md, "Redis away").
type cluster struct {
	// host is this node's publishers (the module): the cluster cuts one
	// off when another node takes its show over.
	host    clusterHost
	shows   *shows.Service
	viewers *viewers
	rdb     *redis.Client
	// redis says whether Redis is away (app.RedisState).
	redis  interface{ Down() bool }
	log    *slog.Logger
	prefix string
	id     string // this node's id
	url    string // this node's internal base URL

	// Timings (leaseTTL > 2 × every, so one missed beat loses nothing).
	leaseTTL time.Duration // of a node's registration and of a live lease
	every    time.Duration // heartbeat, lease renewal and janitor period

	mu     sync.Mutex
	leases map[int64]struct{} // shows whose lease this node holds
	// letGo holds when this node last let go of a show's lease (for a
	// lease period): a publisher of it while Redis is away may take it
	// back here (acquireAlone).
	letGo map[int64]time.Time
	// orphans holds when the janitor first saw a live, connected show
	// without an owner.
	orphans map[int64]time.Time
	owners  ownerCache

	proxy *proxier
	// orphaned counts live shows the janitor found without a node.
	orphaned prometheus.Counter

	sub    *redis.PubSub
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Lease and registry timings (docs/deploy.md).
const (
	leaseTTL   = 10 * time.Second
	leaseEvery = 3 * time.Second
	// archiveLockTTL bounds how long a node that won the archive of a
	// show may take before another may try again.
	archiveLockTTL = 10 * time.Minute
	// lastIngestTTL is how long a node is remembered as the last to
	// ingest a show after it let go of the lease: longer than any
	// reconnect window, after which the show stops and is archived.
	lastIngestTTL = 48 * time.Hour
)

// SettingNodeURL is the internal base URL other nodes reach this one at.
const SettingNodeURL = "ONAIR_NODE_URL"

// Lua scripts: each runs atomically in Redis.
var (
	// renewLease extends the lease (KEYS[1]) when this node holds it,
	// takes it again when it lapsed (a Redis outage longer than the TTL,
	// or a Redis that came back empty) and then notes the node as the
	// last to ingest the show (KEYS[2], for ARGV[3] ms), and reports 0
	// when another node holds it now.
	renewLease = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
elseif not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
  return 1
end
return 0`)
	// releaseLease deletes the key only while it still holds ARGV[1].
	releaseLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
	// takeLease moves the lease from ARGV[1] (a node that is gone) to
	// ARGV[2], only if ARGV[1] still holds it.
	takeLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`)
	// noteLast sets KEYS[1] to ARGV[1] unless another node's id is there:
	// a node letting go of a show another node took meanwhile must not
	// claim the end of its recording.
	noteLast = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`)
)

// command is a message to one node on its channel.
type command struct {
	Op   string `json:"op"` // "replace"
	Show int64  `json:"show"`
	From string `json:"from"`
}

// clusterHost is what the cluster asks of this node's publishers.
type clusterHost interface {
	// ingests reports whether a publisher streams the show here.
	ingests(show int64) bool
	// replaced cuts off the show's publisher here because another node
	// takes the show over; it reports whether there was one.
	replaced(show int64) bool
}

// newCluster prepares the node's part of the cluster (nothing runs before
// start).
func newCluster(core *app.Core, sh *shows.Service, v *viewers, host clusterHost, rdb *redis.Client) (*cluster, error) {
	base, err := nodeURL(app.Get[string](core.Config, SettingNodeURL), core.Config.HTTPAddr)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("live: node id: %w", err)
	}
	c := &cluster{host: host, shows: sh, viewers: v, rdb: rdb, redis: core.RedisState, prefix: core.Config.RedisPrefix, id: hex.EncodeToString(id), url: base,
		leaseTTL: leaseTTL, every: leaseEvery,
		leases: map[int64]struct{}{}, letGo: map[int64]time.Time{}, orphans: map[int64]time.Time{}}
	c.log = core.Log.With("node", c.id)
	c.owners.entries = map[int64]ownerEntry{}
	c.proxy = newProxier(c)
	c.orphaned = prometheus.NewCounter(prometheus.CounterOpts{Name: "onair_live_orphaned_total",
		Help: "Live shows this node's janitor found without an owner node (a node died) and recorded as left; every node that notices counts."})
	return c, nil
}

// nodeURL is ONAIR_NODE_URL, or one derived from the HTTP listen address:
// its host, or (when it listens on every interface) the machine's host
// name when that resolves, else 127.0.0.1.
func nodeURL(setting, httpAddr string) (string, error) {
	if setting != "" {
		return setting, nil
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "", fmt.Errorf("live: %s: cannot derive from ONAIR_HTTP_ADDR %q: %w", SettingNodeURL, httpAddr, err)
	}
	if port == "0" {
		return "", fmt.Errorf("live: %s must be set when ONAIR_HTTP_ADDR has port 0 and ONAIR_REDIS_URL is set: other nodes could not reach this one", SettingNodeURL)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if name, err := os.Hostname(); err == nil && name != "" {
			if addrs, err := net.LookupHost(name); err == nil && len(addrs) > 0 {
				host = name
			}
		}
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// parseNodeURL accepts an empty value (derived) or an http(s) base URL
// without a path.
func parseNodeURL(v string) (any, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", errors.New("must be an http(s) base URL such as http://10.0.0.5:8080")
	}
	return u.Scheme + "://" + u.Host, nil
}

func (c *cluster) nodeKey(id string) string { return c.prefix + "node:" + id }
func (c *cluster) channel(id string) string { return c.prefix + "live:node:" + id }
func (c *cluster) leaseKey(show int64) string {
	return c.prefix + "live:owner:" + strconv.FormatInt(show, 10)
}
func (c *cluster) archiveKey(show int64) string {
	return c.prefix + "live:archiving:" + strconv.FormatInt(show, 10)
}
func (c *cluster) lastKey(show int64) string {
	return c.prefix + "live:last:" + strconv.FormatInt(show, 10)
}

// start registers the node, listens for commands and runs the heartbeat
// and the janitor.
func (c *cluster) start(ctx context.Context) error {
	if err := c.rdb.Set(ctx, c.nodeKey(c.id), c.url, c.leaseTTL).Err(); err != nil {
		return fmt.Errorf("live: register node: %w", err)
	}
	c.sub = c.rdb.Subscribe(ctx, c.channel(c.id))
	if _, err := c.sub.Receive(ctx); err != nil { // the subscription is confirmed
		c.sub.Close()
		return fmt.Errorf("live: subscribe to node commands: %w", err)
	}
	// ctx is the module's Start context, which lives until it stops;
	// stop ends the loops earlier, once the streams are closed.
	run, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.wg.Add(4)
	go func() { defer c.wg.Done(); c.commands() }()
	go func() { defer c.wg.Done(); app.Every(run, viewerShareEvery, c.shareViewers) }()
	go func() { defer c.wg.Done(); app.Every(run, c.every, c.heartbeat) }()
	go func() { defer c.wg.Done(); app.Every(run, c.every, c.janitor) }()
	c.log.Info("cluster node registered", "url", c.url)
	return nil
}

// stop ends the loops, lets go of leases left over and removes the node's
// registration. The module calls it once its streams are closed.
func (c *cluster) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.sub.Close()
	c.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.mu.Lock()
	left := make([]int64, 0, len(c.leases))
	for id := range c.leases {
		left = append(left, id)
	}
	c.mu.Unlock()
	for _, id := range left {
		c.release(ctx, id)
	}
	if err := c.rdb.Del(ctx, c.nodeKey(c.id)).Err(); err != nil {
		c.log.Warn("live: unregister node", "err", err)
	}
}

// heartbeat refreshes the node's registration and renews its leases; a
// lease another node holds now (it took over a stream this node lost
// touch with) cuts the local publisher off. While Redis is away it keeps
// its leases (and logs at debug: RedisState says it once); the first beat
// after Redis returns registers the node and takes its leases again.
func (c *cluster) heartbeat(ctx context.Context) {
	if err := c.rdb.Set(ctx, c.nodeKey(c.id), c.url, c.leaseTTL).Err(); err != nil {
		if ctx.Err() == nil {
			c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: node heartbeat", "err", err)
		}
		if app.IsRedisOutage(err) {
			return
		}
	}
	c.mu.Lock()
	held := make([]int64, 0, len(c.leases))
	for id := range c.leases {
		held = append(held, id)
	}
	c.mu.Unlock()
	for _, id := range held {
		ok, err := renewLease.Run(ctx, c.rdb, []string{c.leaseKey(id), c.lastKey(id)}, c.id,
			c.leaseTTL.Milliseconds(), lastIngestTTL.Milliseconds()).Int()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: renew lease", "show", id, "err", err)
			}
		case ok == 0:
			c.log.Warn("live: another node took the show over", "show", id)
			c.mu.Lock()
			delete(c.leases, id)
			c.mu.Unlock()
			c.host.replaced(id)
		}
	}
}

// acquire takes the show's lease for this node. Held by another node, it
// asks that node to let go (or takes the lease at once when no node listens
// on the holder's channel any more: it is gone) and waits for it until
// deadline. While Redis is away the database decides (acquireAlone).
func (c *cluster) acquire(ctx context.Context, show int64, deadline <-chan time.Time) error {
	if c.redis.Down() {
		return c.acquireAlone(ctx, show)
	}
	key := c.leaseKey(show)
	var asked time.Time
	for {
		ok, err := c.rdb.SetNX(ctx, key, c.id, c.leaseTTL).Result()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			if app.IsRedisOutage(err) {
				return c.acquireAlone(ctx, show)
			}
			return fmt.Errorf("live: show %d: take the live lease: %w", show, err)
		}
		if ok {
			c.took(ctx, show)
			return nil
		}
		holder, err := c.rdb.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue // lapsed meanwhile
		case err != nil:
			return fmt.Errorf("live: show %d: read the live lease: %w", show, err)
		case holder == c.id:
			// A lease of this node that no local stream holds (this node
			// holds the show's local slot): a release that failed.
			c.took(ctx, show)
			return nil
		}
		if time.Since(asked) >= time.Second {
			asked = time.Now()
			msg, _ := json.Marshal(command{Op: "replace", Show: show, From: c.id})
			n, err := c.rdb.Publish(ctx, c.channel(holder), msg).Result()
			if err != nil {
				return fmt.Errorf("live: show %d: ask node %s to let go: %w", show, holder, err)
			}
			if n == 0 {
				// Nobody listens on the holder's channel: the node is gone
				// (a crash closes its Redis connections at once).
				took, err := takeLease.Run(ctx, c.rdb, []string{key}, holder, c.id, c.leaseTTL.Milliseconds()).Int()
				if err != nil {
					return fmt.Errorf("live: show %d: take the lease of gone node %s: %w", show, holder, err)
				}
				if took == 1 {
					c.log.Info("live: took over the show of a node that is gone", "show", show, "from", holder)
					c.took(ctx, show)
					return nil
				}
				continue
			}
			c.log.Info("live: asked the node streaming the show to let go", "show", show, "holder", holder)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline:
			return fmt.Errorf("live: show %d: node %s did not let go of the live lease", show, holder)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// errBusyElsewhere refuses a publisher while Redis, which says which node
// ingests a show, is away and the database says a publisher is connected
// to the show (on another node, as far as this one can tell).
var errBusyElsewhere = &rtmp.StatusError{Code: "NetStream.Publish.Rejected",
	Description: "Another server is receiving this show and the cluster cannot hand it over now; try again in a minute."}

// acquireAlone decides, while Redis is away, whether this node may ingest
// the show (docs/operations.md, "Redis away"): yes when the database says
// no publisher is connected to it (it is not live, or its publisher left
// and the reconnect window runs) or when this node let go of it within a
// lease period (an encoder reconnecting here); no when a publisher is
// connected, which may be on another node: two nodes would each record
// half of the show. Taken here, the lease is written to Redis when it
// returns (heartbeat); if another node took the show meanwhile, the first
// to write keeps it and the other's publisher is cut off.
func (c *cluster) acquireAlone(ctx context.Context, show int64) error {
	sh := &shows.Show{ID: show}
	if err := c.shows.DB().NewSelect().Model(sh).Column("live", "disconnected_at").WherePK().Scan(ctx); err != nil {
		return &rtmp.StatusError{Code: "NetStream.Publish.Rejected", Description: "The server could not check the show; try again.",
			Err: fmt.Errorf("live: show %d: Redis is away and the database did not answer: %w", show, err)}
	}
	c.mu.Lock()
	lately := time.Since(c.letGo[show]) < c.leaseTTL
	c.mu.Unlock()
	if sh.Live && sh.DisconnectedAt == nil && !lately {
		return &rtmp.StatusError{Code: errBusyElsewhere.Code, Description: errBusyElsewhere.Description,
			Err: fmt.Errorf("live: show %d: Redis is away and a publisher is connected to the show, maybe on another node", show)}
	}
	c.hold(show)
	c.log.Info("live: Redis is away; this node takes the show on its own (no publisher is connected elsewhere as far as the database knows)", "show", show)
	return nil
}

// took records a lease this node has just taken: it holds it, and it is
// the last node to ingest the show (its working files will hold the end of
// the recording; takeArchive).
func (c *cluster) took(ctx context.Context, show int64) {
	c.hold(show)
	if err := c.rdb.Set(ctx, c.lastKey(show), c.id, lastIngestTTL).Err(); err != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: note the last node to ingest", "show", show, "err", err)
	}
}

func (c *cluster) hold(show int64) {
	c.mu.Lock()
	c.leases[show] = struct{}{}
	c.mu.Unlock()
	c.owners.forget(show)
}

// held counts the leases this node holds.
func (c *cluster) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.leases)
}

// holds tells whether this node holds the show's lease.
func (c *cluster) holds(show int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.leases[show]
	return ok
}

// release lets go of the show's lease, if this node still holds it.
func (c *cluster) release(ctx context.Context, show int64) {
	now := time.Now()
	c.mu.Lock()
	if _, ok := c.leases[show]; ok {
		c.letGo[show] = now
	}
	delete(c.leases, show)
	for id, at := range c.letGo {
		if now.Sub(at) >= c.leaseTTL {
			delete(c.letGo, id)
		}
	}
	c.mu.Unlock()
	// Refresh the note that this node ingested the show last (its TTL
	// counts from the end of the stream) before the lease goes, so no
	// moment shows neither: unless another node took the show meanwhile.
	if err := noteLast.Run(ctx, c.rdb, []string{c.lastKey(show)}, c.id, lastIngestTTL.Milliseconds()).Err(); err != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: note the last node to ingest", "show", show, "err", err)
	}
	if err := releaseLease.Run(ctx, c.rdb, []string{c.leaseKey(show)}, c.id).Err(); err != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: release lease", "show", show, "err", err)
	}
}

// owner is the node holding the show's lease ("" when none).
func (c *cluster) owner(ctx context.Context, show int64) (string, error) {
	id, err := c.rdb.Get(ctx, c.leaseKey(show)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return id, err
}

// commands runs the commands other nodes send this one.
func (c *cluster) commands() {
	for msg := range c.sub.Channel() {
		var cmd command
		if err := json.Unmarshal([]byte(msg.Payload), &cmd); err != nil || cmd.Show < 1 {
			c.log.Warn("live: bad node command", "payload", msg.Payload)
			continue
		}
		switch cmd.Op {
		case "replace":
			c.log.Info("live: another node takes the show over", "show", cmd.Show, "by", cmd.From)
			if !c.host.replaced(cmd.Show) {
				// No local stream holds the lease (a release that failed):
				// let it go now, if it is this node's.
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				c.release(rctx, cmd.Show)
				cancel()
			}
		}
	}
}

// janitor starts the reconnect window of live shows whose owner is gone:
// live, with a publisher as far as the database knows, and no lease for
// longer than a lease period (the lease of a crashed node lapses). While
// Redis is away it cannot tell, and waits.
func (c *cluster) janitor(ctx context.Context) {
	if c.redis.Down() {
		return
	}
	var ids []int64
	err := c.shows.DB().NewSelect().Model((*shows.Show)(nil)).Column("id").
		Where("live = ?", true).Where("disconnected_at IS NULL").Scan(ctx, &ids)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("live: cluster janitor", "err", err)
		}
		return
	}
	pipe := c.rdb.Pipeline()
	exists := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		exists[i] = pipe.Exists(ctx, c.leaseKey(id))
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			if ctx.Err() == nil {
				c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: cluster janitor", "err", err)
			}
			return
		}
	}
	now := time.Now()
	var gone []int64
	c.mu.Lock()
	seen := make(map[int64]bool, len(ids))
	for i, id := range ids {
		if exists[i].Val() > 0 {
			continue
		}
		if _, ok := c.leases[id]; ok {
			continue
		}
		seen[id] = true
		first, ok := c.orphans[id]
		if !ok {
			c.orphans[id] = now
		} else if now.Sub(first) >= c.leaseTTL {
			gone = append(gone, id)
		}
	}
	for id := range c.orphans {
		if !seen[id] {
			delete(c.orphans, id)
		}
	}
	for _, id := range gone {
		delete(c.orphans, id)
	}
	c.mu.Unlock()
	for _, id := range gone {
		if err := c.shows.PublisherLeft(ctx, id); err != nil {
			c.log.Error("live: publisher left", "show", id, "err", err)
			continue
		}
		c.orphaned.Inc()
		c.log.Info("live show lost its node; waiting for the publisher to reconnect", "show", id)
	}
}

// takeArchive decides whether this node archives a stopped show: the node
// that held its lease does (it has the working files); when no node holds
// it (the publisher had left, or its node is gone), the first node to set
// {prefix}live:archiving:{id} does. owner tells whether this node held the
// lease when the show stopped.
func (c *cluster) takeArchive(ctx context.Context, show int64, owner bool) bool {
	if !owner {
		holder, err := c.owner(ctx, show)
		if err != nil {
			c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: archive: read the live lease", "show", show, "err", err)
			return false
		}
		if holder != "" && holder != c.id {
			return false // the owner archives
		}
		if holder == "" && c.lastElsewhere(ctx, show) {
			return false // the last node to ingest it archives
		}
	}
	ok, err := c.rdb.SetNX(ctx, c.archiveKey(show), c.id, archiveLockTTL).Result()
	if err != nil {
		c.log.Warn("live: archive: take the archive lock", "show", show, "err", err)
		return false
	}
	return ok
}

// lastElsewhere tells whether another node, still running, was the last to
// ingest the show: its working files hold the end of the recording that
// this node's may lack (or its uploads may still be under way).
func (c *cluster) lastElsewhere(ctx context.Context, show int64) bool {
	last, err := c.rdb.Get(ctx, c.lastKey(show)).Result()
	if err != nil || last == c.id {
		return false
	}
	alive, err := c.rdb.Exists(ctx, c.nodeKey(last)).Result()
	return err == nil && alive == 1
}

// archiveFailed lets another node (or a restart) try the show's archive.
func (c *cluster) archiveFailed(show int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	releaseLease.Run(ctx, c.rdb, []string{c.archiveKey(show)}, c.id)
}

// ownerCache remembers, briefly, which node serves a show's live media,
// so a player's polls through a node do not each ask Redis.
type ownerCache struct {
	mu      sync.Mutex
	entries map[int64]ownerEntry
}

type ownerEntry struct {
	url string // "" when no other node owns the show
	at  time.Time
}

const ownerCacheTTL = time.Second

func (o *ownerCache) get(show int64, now time.Time) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[show]
	if !ok || now.Sub(e.at) >= ownerCacheTTL {
		return "", false
	}
	return e.url, true
}

func (o *ownerCache) put(show int64, url string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.entries) > 10000 {
		o.entries = map[int64]ownerEntry{}
	}
	o.entries[show] = ownerEntry{url: url, at: now}
}

func (o *ownerCache) forget(show int64) {
	o.mu.Lock()
	delete(o.entries, show)
	o.mu.Unlock()
}

// ownerURL is the base URL of the node that ingests the show, "" when it
// is this node or none.
func (c *cluster) ownerURL(ctx context.Context, show int64) string {
	now := time.Now()
	if u, ok := c.owners.get(show, now); ok {
		return u
	}
	if c.redis.Down() {
		// Redis is away: the request stays here (store or local files)
		// rather than wait for it (docs/operations.md, "Redis away").
		return ""
	}
	u := ""
	holder, err := c.owner(ctx, show)
	if err == nil && holder != "" && holder != c.id {
		u, err = c.rdb.Get(ctx, c.nodeKey(holder)).Result()
		if errors.Is(err, redis.Nil) {
			u, err = "", nil
		}
	}
	if err != nil {
		c.log.Log(ctx, app.RedisLevel(err, slog.LevelWarn), "live: look up the show's node", "show", show, "err", err)
		return ""
	}
	c.owners.put(show, u, now)
	return u
}

// ownedElsewhere tells whether a node holds the show's lease; a lookup
// that fails counts as held (the janitor looks again).
func (c *cluster) ownedElsewhere(ctx context.Context, show int64) bool {
	holder, err := c.owner(ctx, show)
	return err != nil || holder != "" && holder != c.id
}
