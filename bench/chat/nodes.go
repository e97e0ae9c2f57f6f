package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onair/onair/bench/internal/benchkit"
)

// With -nodes above 1 (or -cluster) the room is served as a multi-node
// deployment serves it (docs/deploy.md): every node on one MariaDB database and one
// Redis (chat fan-out, presence and the post rate shared through it),
// each with a data directory of its own. The database is the benchmark's
// own (onair_bench_chat by default, dropped and made for each run; never
// onair_bench, which bench/shows keeps seeded), and the Redis keys have a
// prefix of the run's own, deleted at its end, so tests on the same Redis
// cannot meet them.

// nodeFigures is what a phase measured of one node.
type nodeFigures struct {
	connected           int // the viewers on it
	rssBefore, rssAfter int64
	// handler is the node's chat POST handler histogram over the phase
	// (its /metrics); postLatency the poster's round trips to it, sorted.
	handler     buckets
	postLatency []time.Duration
}

// sharedParts makes the nodes' database, holding its lock for the run,
// and chooses their Redis prefix; it returns their settings and what
// deletes the run's Redis keys and lets the database go.
func sharedParts(ctx context.Context, o options) (map[string]string, func(), error) {
	u, err := url.Parse(o.nodesDB)
	if err != nil || u.Scheme != "mysql" {
		return nil, nil, fmt.Errorf("-nodes-db %q: not a mysql:// URL", o.nodesDB)
	}
	if name := strings.TrimPrefix(u.Path, "/"); name == "onair_bench" {
		return nil, nil, fmt.Errorf("-nodes-db: onair_bench is bench/shows' seeded database; name another")
	}
	// Every run drops and remakes the database: a second run on it at
	// the same time would pull it from under the first's nodes.
	unlock, err := benchkit.LockMySQLDatabase(ctx, o.nodesDB)
	if err != nil {
		return nil, nil, fmt.Errorf("-nodes-db: %w", err)
	}
	if err := benchkit.MySQLDatabase(ctx, o.nodesDB, true); err != nil {
		unlock()
		return nil, nil, fmt.Errorf("-nodes-db: %w", err)
	}
	ropts, err := redis.ParseURL(o.nodesRedis)
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("-nodes-redis: %w", err)
	}
	rdb := redis.NewClient(ropts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		unlock()
		return nil, nil, fmt.Errorf("-nodes-redis: %w", err)
	}
	tag := make([]byte, 4)
	rand.Read(tag)
	prefix := "onair_bench_chat:" + hex.EncodeToString(tag) + ":"
	cleanup := func() {
		defer unlock()
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := deleteKeys(ctx, rdb, prefix)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chat: deleting the Redis keys %s*: %v\n", prefix, err)
			return
		}
		fmt.Fprintf(os.Stderr, "deleted %d Redis keys %s*\n", n, prefix)
	}
	return map[string]string{
		"ONAIR_DATABASE_URL": o.nodesDB,
		"ONAIR_REDIS_URL":    o.nodesRedis,
		"ONAIR_REDIS_PREFIX": prefix,
	}, cleanup, nil
}

// deleteKeys deletes the keys that begin with prefix.
func deleteKeys(ctx context.Context, rdb *redis.Client, prefix string) (int, error) {
	n := 0
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
			return n, err
		}
		n++
	}
	return n, iter.Err()
}
