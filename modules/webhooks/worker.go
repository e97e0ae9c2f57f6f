package webhooks

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// Retries: the delay after attempt n (1-based) before attempt n+1, the
// schedule of Standard Webhooks / Svix stretched to the issue's: within
// 10 s, then about 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Each delay
// is jittered by ±20 %.
var schedule = []time.Duration{
	5 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Backoff is the delay before the attempt after attempt n, jittered.
func Backoff(n int) time.Duration {
	d := schedule[len(schedule)-1]
	if n >= 1 && n <= len(schedule) {
		d = schedule[n-1]
	}
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// Limits of a response.
const (
	maxResponseRead  = 64 << 10 // read at most this much of a response body
	maxResponseStore = 4 << 10  // and keep this much of it with the attempt
	maxErrorLen      = 500
)

// claimed is a delivery this node took, with its webhook.
type claimed struct {
	d Delivery
	w Webhook
}

// lease is how long a claim keeps other nodes off a webhook: longer than
// any attempt may take.
func (m *Module) lease() time.Duration { return 2*m.cfg.timeout + 5*time.Second }

// run is the node's delivery loop: claim what is due, send up to
// ONAIR_WEBHOOK_WORKERS at once, then sleep until woken (a change of this
// node committed deliveries, or one of its sends ended), until the next
// delivery it knows of is due (a retry, a lease that ends), or for at most
// ONAIR_WEBHOOK_POLL, the safety poll that finds what other nodes left.
// An idle node therefore reads the database once a poll, not each second.
func (m *Module) run(ctx context.Context) {
	sem := make(chan struct{}, m.cfg.workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer m.client.close()
	timer := time.NewTimer(m.cfg.poll)
	defer timer.Stop()
	var counted, purged time.Time
	for ctx.Err() == nil {
		free := cap(sem) - len(sem)
		var batch []claimed
		if free > 0 {
			var err error
			batch, err = m.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				if app.IsDeadlock(err) {
					m.log.Debug("webhooks: claim deadlocked; trying again", "err", err)
				} else {
					m.log.Error("webhooks: claim", "err", err)
				}
			}
		}
		for _, c := range batch {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A send outlives a stop request: its outcome is recorded.
				m.send(context.WithoutCancel(ctx), c)
				<-sem
				m.Wake()
			}()
		}
		if time.Since(counted) > 5*time.Second {
			counted = time.Now()
			m.countBacklog(ctx)
		}
		if time.Since(purged) > time.Hour {
			purged = time.Now()
			if _, err := m.Purge(ctx); err != nil && ctx.Err() == nil {
				m.log.Error("webhooks: purge", "err", err)
			}
		}
		if len(batch) > 0 && len(batch) == free {
			continue // there may be more
		}
		wait := m.cfg.poll
		if free > len(batch) {
			// Every worker busy: the next send to end wakes the loop.
			wait = min(wait, m.untilDue(ctx))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-m.wake:
		case <-timer.C:
		}
	}
}

// minWait is the least a loop that found a due delivery it could not claim
// sleeps (another node took it meanwhile, or the clocks disagree), as the
// poll was before the loop slept on work.
const minWait = time.Second

// untilDue is how long until the next delivery this node could claim is
// due: the earliest next attempt of a pending delivery of an active
// webhook that no older delivery of its show holds back, or the end of its
// webhook's lease if that is later. With none, it is ONAIR_WEBHOOK_POLL.
func (m *Module) untilDue(ctx context.Context) time.Duration {
	// A struct, for bun to parse the time SQLite returns as text.
	var row struct {
		Next bun.NullTime `bun:"next"`
	}
	err := m.db.NewSelect().TableExpr("webhook_deliveries AS d").
		Join("JOIN webhooks AS w ON w.id = d.webhook_id").
		ColumnExpr("MIN(CASE WHEN w.busy_until > d.next_attempt_at THEN w.busy_until ELSE d.next_attempt_at END) AS next").
		Where("d.status = ?", StatusPending).Where("w.active = ?", true).
		Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries AS p WHERE p.webhook_id = d.webhook_id AND d.show_id <> 0 AND p.show_id = d.show_id AND p.status = ? AND p.id < d.id)", StatusPending).
		Scan(ctx, &row)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("webhooks: next due delivery", "err", err)
		}
		return minWait
	}
	if row.Next.IsZero() {
		return m.cfg.poll
	}
	if d := row.Next.Sub(m.now()); d > 0 {
		return d
	}
	return minWait
}

func (m *Module) countBacklog(ctx context.Context) {
	n, err := m.db.NewSelect().Model((*Delivery)(nil)).Where("status = ?", StatusPending).Count(ctx)
	if err == nil {
		m.metrics.backlog.Set(float64(n))
	}
}

// claim takes up to n due deliveries, at most one per webhook (a webhook
// receives one delivery at a time), and never a delivery with an older
// one of the same show still pending for that webhook (ordering within a
// show). It first lists the webhooks that have due deliveries, oldest
// first (so one webhook's backlog never starves the others), then, in
// webhook id order, locks each one's oldest eligible delivery (FOR UPDATE
// SKIP LOCKED on MySQL) and takes the webhook's lease with a conditional
// update: two nodes never take the same delivery, nor two deliveries of
// one webhook. SQLite runs one worker on one connection.
func (m *Module) claim(ctx context.Context, n int) ([]claimed, error) {
	now := m.now()
	var out []claimed
	err := m.db.RunInTx(ctx, m.txOptions(), func(ctx context.Context, tx bun.Tx) error {
		out = out[:0]
		var ids []int64
		err := tx.NewSelect().Model((*Delivery)(nil)).Column("d.webhook_id").
			Where("d.status = ?", StatusPending).Where("d.next_attempt_at <= ?", now).
			Where("EXISTS (SELECT 1 FROM webhooks AS w WHERE w.id = d.webhook_id AND w.active = ? AND (w.busy_until IS NULL OR w.busy_until < ?))", true, now).
			Group("d.webhook_id").OrderExpr("MIN(d.id) ASC").Limit(int64(n*4)).Scan(ctx, &ids)
		if err != nil {
			return err
		}
		// On MySQL the oldest 2n webhooks are taken in id order, so two
		// nodes never wait on each other in a cycle; SQLite (one
		// connection) takes them oldest first.
		if app.IsMySQL(tx) {
			ids = ids[:min(len(ids), 2*n)]
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		}
		until := now.Add(m.lease())
		for _, wid := range ids {
			if len(out) == n {
				break
			}
			var d Delivery
			q := tx.NewSelect().Model(&d).
				Where("d.webhook_id = ?", wid).Where("d.status = ?", StatusPending).Where("d.next_attempt_at <= ?", now).
				Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries AS p WHERE p.webhook_id = d.webhook_id AND d.show_id <> 0 AND p.show_id = d.show_id AND p.status = ? AND p.id < d.id)", StatusPending).
				OrderExpr("d.id ASC").Limit(1)
			if app.IsMySQL(tx) {
				q = q.For("UPDATE SKIP LOCKED")
			}
			if err := q.Scan(ctx); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				return err
			}
			res, err := tx.NewUpdate().Model((*Webhook)(nil)).
				Set("busy_until = ?", until).Set("busy_by = ?", m.node).
				Where("id = ?", wid).Where("active = ?", true).
				WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
					return q.Where("busy_until IS NULL").WhereOr("busy_until < ?", now)
				}).Exec(ctx)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 {
				continue // another node has it
			}
			d.NextAttemptAt = &until
			if _, err := tx.NewUpdate().Model(&d).Column("next_attempt_at").WherePK().Exec(ctx); err != nil {
				return err
			}
			c := claimed{d: d}
			if err := tx.NewSelect().Model(&c.w).Where("id = ?", wid).Scan(ctx); err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// txOptions are those of the workers' transactions: READ COMMITTED on
// MySQL, so their locking reads take no gap locks, and a change that
// inserts deliveries meanwhile (a show going live) never waits on a claim
// nor deadlocks with it. SQLite keeps its one serialised connection.
func (m *Module) txOptions() *sql.TxOptions {
	if app.IsMySQL(m.db) {
		return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return nil
}

// outcome is what one attempt found.
type outcome struct {
	status   *int
	duration time.Duration
	err      string
	response string
	result   string // metric label
}

// send makes one attempt and records it.
func (m *Module) send(ctx context.Context, c claimed) {
	o := m.attempt(ctx, &c.w, &c.d)
	m.metrics.deliveries.WithLabelValues(o.result).Inc()
	m.metrics.latency.Observe(o.duration.Seconds())
	if err := m.record(ctx, &c, o); err != nil {
		m.log.Error("webhooks: record attempt", "delivery", c.d.ID, "err", err)
	}
}

func (m *Module) attempt(ctx context.Context, w *Webhook, d *Delivery) outcome {
	ts := m.now()
	body := []byte(d.Payload)
	sig, err := w.signatures(d.EventID, ts, body)
	if err != nil {
		return outcome{err: err.Error(), result: "network_error"}
	}
	if p := checkURL(w.URL); p != "" {
		return outcome{err: "url " + p, result: "blocked"}
	}
	if m.destinationRefused(w.URL) {
		return outcome{err: refusedPrivate, result: "blocked"}
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return outcome{err: err.Error(), result: "network_error"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "OnAir-Webhooks/"+app.Version)
	req.Header.Set("webhook-id", d.EventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := m.client.do(ctx, req)
	if err != nil {
		o := outcome{duration: time.Since(start), err: describe(err), result: "network_error"}
		if errors.Is(err, errBlocked) {
			o.result, o.err = "blocked", refusedPrivate
		}
		return o
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	_ = resp.Body.Close()
	code := resp.StatusCode
	o := outcome{status: &code, duration: time.Since(start), response: truncate(string(data), maxResponseStore)}
	if code >= 200 && code < 300 {
		o.result = "success"
	} else {
		o.result = "http_error"
		o.err = fmt.Sprintf("HTTP %d", code)
		if code >= 300 && code < 400 {
			o.err += " (redirects are not followed)"
		}
	}
	return o
}

// describe makes a transport error short and free of the request URL
// (which the user knows; the error is stored and shown in the API), of the
// address dialled and of the resolver asked: "dial: connect: connection
// refused", "dns lookup failed: no such host".
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, errBlocked):
		return refusedPrivate
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return "dns lookup timed out"
		}
		return truncate("dns lookup failed: "+dnsErr.Err, maxErrorLen)
	case errors.As(err, &opErr) && opErr.Err != nil:
		if opErr.Timeout() {
			return opErr.Op + ": timed out"
		}
		return truncate(opErr.Op+": "+opErr.Err.Error(), maxErrorLen)
	}
	return truncate(err.Error(), maxErrorLen)
}

// truncate cuts s to at most n bytes on a rune boundary, as valid UTF-8.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// record stores an attempt: the delivery's new state (succeeded, failed
// for good, or the next attempt's time), the attempt row, the webhook's
// failure window (disabling it once ONAIR_WEBHOOK_DISABLE_AFTER has
// passed without a success) and the end of its lease.
func (m *Module) record(ctx context.Context, c *claimed, o outcome) error {
	now := m.now()
	d := &c.d
	d.Attempts++
	d.StatusCode, d.Error, d.UpdatedAt = o.status, truncate(o.err, maxErrorLen), now
	ms := int(o.duration / time.Millisecond)
	d.DurationMS = &ms
	success := o.result == "success"
	switch {
	case success:
		d.Status, d.NextAttemptAt = StatusSucceeded, nil
	case d.Attempts >= m.cfg.maxAttempts:
		d.Status, d.NextAttemptAt = StatusFailed, nil
	default:
		next := now.Add(Backoff(d.Attempts))
		d.Status, d.NextAttemptAt = StatusPending, &next
	}
	att := &Attempt{DeliveryID: d.ID, WebhookID: d.WebhookID, Number: d.Attempts, StatusCode: o.status,
		DurationMS: ms, Error: d.Error, Response: o.response, NextAttemptAt: d.NextAttemptAt, CreatedAt: now}
	disabled := false
	err := m.db.RunInTx(ctx, m.txOptions(), func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model(d).
			Column("status", "attempts", "next_attempt_at", "status_code", "duration_ms", "error", "updated_at").
			WherePK().Exec(ctx)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil // the webhook was deleted meanwhile
		}
		if _, err := tx.NewInsert().Model(att).Exec(ctx); err != nil {
			return err
		}
		w := new(Webhook)
		q := tx.NewSelect().Model(w).Where("id = ?", d.WebhookID)
		if app.IsMySQL(tx) {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			if errors.Is(err, errSQLNoRows) {
				return nil // deleted meanwhile
			}
			return err
		}
		cols := []string{"updated_at"}
		w.UpdatedAt = now
		if w.BusyBy == m.node {
			w.BusyUntil, w.BusyBy = nil, ""
			cols = append(cols, "busy_until", "busy_by")
		}
		switch {
		case success:
			if w.FailingSince != nil {
				w.FailingSince = nil
				cols = append(cols, "failing_since")
			}
		case w.FailingSince == nil:
			w.FailingSince = &now
			cols = append(cols, "failing_since")
		case w.Active && now.Sub(*w.FailingSince) >= m.cfg.disableAfter:
			disabled = true
			w.Active = false
			w.DisabledReason = truncate(fmt.Sprintf("disabled at %s: every delivery failed since %s (last: %s)",
				now.Format(app.TimeLayout), w.FailingSince.Format(app.TimeLayout), d.Error), 500)
			cols = append(cols, "active", "disabled_reason")
			if _, err := tx.NewUpdate().Model((*Delivery)(nil)).
				Set("status = ?", StatusFailed).Set("next_attempt_at = NULL").Set("error = ?", "webhook disabled").Set("updated_at = ?", now).
				Where("webhook_id = ?", w.ID).Where("status = ?", StatusPending).Exec(ctx); err != nil {
				return err
			}
		}
		_, err = tx.NewUpdate().Model(w).Column(cols...).WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if disabled {
		m.metrics.disabled.Inc()
		m.log.Warn("webhooks: webhook disabled after failing", "webhook", d.WebhookID, "since", m.cfg.disableAfter)
	}
	return nil
}

// Purge deletes the deliveries that are no longer pending and older than
// ONAIR_WEBHOOK_RETENTION, with their attempts, and says how many
// deliveries it deleted. Every node runs it hourly.
func (m *Module) Purge(ctx context.Context) (int, error) {
	cutoff := m.now().Add(-m.cfg.retention)
	old := m.db.NewSelect().Model((*Delivery)(nil)).Column("id").
		Where("status <> ?", StatusPending).Where("created_at < ?", cutoff)
	var n int64
	err := m.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var ids []int64
		if err := tx.NewSelect().TableExpr("(?) AS old", old).Column("id").Limit(10000).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.NewDelete().Model((*Attempt)(nil)).Where("delivery_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*Delivery)(nil)).Where("id IN (?)", bun.List(ids)).Exec(ctx)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("webhooks: purge: %w", err)
	}
	// Deliveries of webhooks gone with their user.
	orphans := m.db.NewSelect().Model((*Webhook)(nil)).Column("id")
	if _, err := m.db.NewDelete().Model((*Attempt)(nil)).Where("webhook_id NOT IN (?)", orphans).Exec(ctx); err != nil {
		return int(n), fmt.Errorf("webhooks: purge: %w", err)
	}
	res, err := m.db.NewDelete().Model((*Delivery)(nil)).Where("webhook_id NOT IN (?)", orphans).Exec(ctx)
	if err != nil {
		return int(n), fmt.Errorf("webhooks: purge: %w", err)
	}
	k, _ := res.RowsAffected()
	return int(n + k), nil
}
