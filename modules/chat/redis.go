package chat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// presenceTTL is how long a node's presence entries live without a
// refresh: a crashed node's viewers disappear after it.
const presenceTTL = 30 * time.Second

// redisBus publishes room events on one Redis channel that every node
// subscribes to. A payload is "<showID>\n<json>".
type redisBus struct {
	rdb     *redis.Client
	channel string
}

func (b *redisBus) Publish(ctx context.Context, showID int64, payload []byte) error {
	msg := make([]byte, 0, len(payload)+12)
	msg = strconv.AppendInt(msg, showID, 10)
	msg = append(msg, '\n')
	msg = append(msg, payload...)
	return b.rdb.Publish(ctx, b.channel, msg).Err()
}

func (b *redisBus) Run(ctx context.Context, deliver func(int64, []byte)) {
	sub := b.rdb.Subscribe(ctx, b.channel)
	defer sub.Close()
	ch := sub.Channel(redis.WithChannelSize(1024))
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			head, body, found := strings.Cut(m.Payload, "\n")
			id, err := strconv.ParseInt(head, 10, 64)
			if !found || err != nil {
				continue
			}
			deliver(id, []byte(body))
		}
	}
}

// redisPresence keeps, per show, a sorted set of "<node>|<viewer key>"
// scored by expiry time. Each node refreshes its own entries; Keys reads
// the unexpired ones and folds the nodes away.
type redisPresence struct {
	rdb    *redis.Client
	prefix string
	node   string
}

func (p *redisPresence) key(showID int64) string {
	return fmt.Sprintf("%spresence:%d", p.prefix, showID)
}

func (p *redisPresence) expiry() float64 {
	return float64(time.Now().Add(presenceTTL).UnixMilli())
}

func (p *redisPresence) Join(ctx context.Context, showID int64, key string) error {
	pipe := p.rdb.TxPipeline()
	pipe.ZAdd(ctx, p.key(showID), redis.Z{Score: p.expiry(), Member: p.node + "|" + key})
	pipe.Expire(ctx, p.key(showID), 2*presenceTTL)
	_, err := pipe.Exec(ctx)
	return err
}

func (p *redisPresence) Leave(ctx context.Context, showID int64, key string) error {
	return p.rdb.ZRem(ctx, p.key(showID), p.node+"|"+key).Err()
}

func (p *redisPresence) Keys(ctx context.Context, showID int64) ([]string, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	members, err := p.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: p.key(showID), ByScore: true, Start: "(" + now, Stop: "+inf"}).Result()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var keys []string
	for _, m := range members {
		_, k, ok := strings.Cut(m, "|")
		if ok && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

func (p *redisPresence) Refresh(ctx context.Context, present map[int64][]string) error {
	pipe := p.rdb.Pipeline()
	exp := p.expiry()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for showID, keys := range present {
		for _, k := range keys {
			pipe.ZAdd(ctx, p.key(showID), redis.Z{Score: exp, Member: p.node + "|" + k})
		}
		pipe.ZRemRangeByScore(ctx, p.key(showID), "-inf", now)
		pipe.Expire(ctx, p.key(showID), 2*presenceTTL)
	}
	_, err := pipe.Exec(ctx)
	return err
}
