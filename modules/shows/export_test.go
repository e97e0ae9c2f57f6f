package shows

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
)

// MigratePeakViewers is migration 0028, for the upgrade test.
var MigratePeakViewers = migrations.AddColumns((*Show)(nil), "peak_viewers")

// FreshListItems is the items array and count GET /v1/shows answers for
// q, read without the list cache.
func FreshListItems(ctx context.Context, s *Service, q ListQuery) ([]byte, int, error) {
	list, count, err := s.Lists.List(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	views := make([]*View, 0, len(list))
	for i := range list {
		views = append(views, s.Views.ViewFor(&list[i], false, q.Viewer))
	}
	items, err := json.Marshal(views)
	return items, count, err
}

// ListCacheStats is the number of cached lists and their bytes.
// FillTagIDs is migration 0032's fill of Show.TagIDs from show_tags.
var FillTagIDs = fillTagIDs

func ListCacheStats(s *Service) (int, int) { return s.Lists.cache.stats() }

// SetListCacheEntries lowers the bound on the number of cached lists.
func SetListCacheEntries(s *Service, n int) { s.Lists.cache.maxEntries = n }

// SetListCacheAsked lowers the bound on the lists remembered as asked once.
func SetListCacheAsked(s *Service, n int) { s.Lists.cache.maxAsked = n }

// SetListCacheWallClock moves the kernel's clock of s, which bounds the
// entries holding signed media links; the returned function puts the real
// one back.
func SetListCacheWallClock(s *Service, now func() time.Time) func() {
	s.clock.Set(now)
	return func() { s.clock.Set(nil) }
}

// OwnerPageTwoWays reads the page of q (one owner's shows, q.UserID set)
// with the one statement of ownerPage and, to compare, with the count and
// page statements every other list uses.
func OwnerPageTwoWays(ctx context.Context, s *Service, q ListQuery) (one []Show, oneCount int, two []Show, twoCount int, err error) {
	l := s.Lists
	f, err := l.resolve(ctx, q, app.Now())
	if err != nil || f.none {
		return nil, 0, nil, 0, err
	}
	if one, oneCount, err = l.ownerPage(ctx, f); err != nil {
		return
	}
	if twoCount, err = l.count(ctx, f); err != nil {
		return
	}
	if f.q.Page.Offset() < twoCount {
		two, err = l.page(ctx, f)
	}
	return
}

// SetNameMatchChunks sets how many candidates of a name filter one
// statement confirms (publicMatches) and how many candidates at most are
// read that way (0: none, every term in one statement), until the test
// ends, and forgets the name matches read so far.
func SetNameMatchChunks(t interface{ Cleanup(func()) }, s *Service, chunk, candidates int) {
	c, n := matchChunk, matchCandidates
	matchChunk, matchCandidates = chunk, candidates
	t.Cleanup(func() { matchChunk, matchCandidates = c, n })
	s.Lists.matches.mu.Lock()
	s.Lists.matches.m = nil
	s.Lists.matches.mu.Unlock()
}

// SetNameMatchCaps sets how many public matches of a term are kept per
// node (matchCap) and how many gram rows a name-only list reads at most
// (gramScanCap; -1: none, every term confirmed in the name cover index),
// until the test ends, and forgets the name matches read so far.
func SetNameMatchCaps(t interface{ Cleanup(func()) }, s *Service, keep int, scan int64) {
	k, n := matchCap, gramScanCap
	matchCap, gramScanCap = keep, scan
	t.Cleanup(func() { matchCap, gramScanCap = k, n })
	s.Lists.matches.mu.Lock()
	s.Lists.matches.m = nil
	s.Lists.matches.mu.Unlock()
}

// SetGramSplitRows sets the estimate of a gram's rows past which a
// name-only list reads them in ranges at once, until the test ends.
func SetGramSplitRows(t interface{ Cleanup(func()) }, rows int64) {
	n := gramSplitRows
	gramSplitRows = rows
	t.Cleanup(func() { gramSplitRows = n })
}

// DeleteInTx is Delete's change inside tx, for a test that holds the
// deletion's transaction open; the events are not delivered.
func DeleteInTx(ctx context.Context, s *Service, tx bun.IDB, id int64) error {
	_, err := deleteInTx(ctx, s, tx, id, nil, s.clock.Stamp())
	return err
}
