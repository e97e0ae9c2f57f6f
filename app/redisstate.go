package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// IsRedisOutage tells whether err, from a Redis command, means Redis could
// not be reached (refused, reset, timed out, closed by a restart) rather
// than a reply: redis.Nil and Redis's own error replies (WRONGTYPE,
// NOSCRIPT) are answers, and a context the caller cancelled is the
// caller's doing.
func IsRedisOutage(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

// RedisState watches every command of the shared Redis client (it is a
// go-redis hook) and says whether Redis is away. While it is, each node
// works on its own (docs/operations.md, "Redis away"): chat reaches the
// sockets of the node a message was posted on, rate limits count per
// node, playback goes on. The change is logged once each way: a warning
// when the first command fails to reach Redis, a note when one reaches it
// again.
type RedisState struct {
	log  *slog.Logger
	down atomic.Bool
	// lastOK is when a command last reached Redis (unix ns): a failure
	// within redisSettle of it (a dial begun before a restart ended, a
	// command already on its way when Redis went) does not yet count.
	lastOK atomic.Int64
}

// redisSettle is how long after a success a failure is not yet an outage.
const redisSettle = time.Second

var _ redis.Hook = (*RedisState)(nil)

func newRedisState(log *slog.Logger) *RedisState { return &RedisState{log: log} }

// Down tells whether Redis is away. The callers of a request's path (the
// rate limits, the chat's bus) then go straight to their local fallback
// rather than wait for the client's dial retries; the node's background
// loops (the events stream, the live heartbeat) keep asking Redis and
// notice its return.
func (s *RedisState) Down() bool { return s != nil && s.down.Load() }

func (s *RedisState) observe(err error) {
	switch {
	case IsRedisOutage(err):
		if time.Now().UnixNano()-s.lastOK.Load() < int64(redisSettle) {
			return
		}
		if s.down.CompareAndSwap(false, true) {
			s.log.Warn("redis unavailable: this node works on its own until it returns (chat on this node's sockets, rate limits per node; docs/operations.md)", "err", err)
		}
	case err == nil || errors.Is(err, redis.Nil):
		s.lastOK.Store(time.Now().UnixNano())
		if s.down.CompareAndSwap(true, false) {
			s.log.Info("redis answers again: chat, presence and rate limits are shared between the nodes again")
		}
	}
}

func (s *RedisState) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			s.observe(err)
		}
		return c, err
	}
}

func (s *RedisState) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		s.observe(err)
		return err
	}
}

func (s *RedisState) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		s.observe(err)
		return err
	}
}
