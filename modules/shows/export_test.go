package shows

import (
	"context"
	"encoding/json"
	"time"

	"github.com/onair/onair/app"
	"github.com/onair/onair/migrations"
	"github.com/onair/onair/modules/users"
)

// MigratePeakViewers is migration 0028, for the upgrade test.
var MigratePeakViewers = migrations.AddColumns((*Show)(nil), "peak_viewers")

// FreshListItems is the items array and count GET /v1/shows answers for
// q, read without the list cache.
func FreshListItems(ctx context.Context, s *Service, q ListQuery) ([]byte, int, error) {
	list, count, err := s.List(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	views := make([]*View, 0, len(list))
	for i := range list {
		views = append(views, s.ViewFor(&list[i], false, q.Viewer))
	}
	items, err := json.Marshal(views)
	return items, count, err
}

// ListCacheStats is the number of cached lists and their bytes.
// FillTagIDs is migration 0032's fill of Show.TagIDs from show_tags.
var FillTagIDs = fillTagIDs

func ListCacheStats(s *Service) (int, int) { return s.lists.stats() }

// SetListCacheEntries lowers the bound on the number of cached lists.
func SetListCacheEntries(s *Service, n int) { s.lists.maxEntries = n }

// SetListCacheAsked lowers the bound on the lists remembered as asked once.
func SetListCacheAsked(s *Service, n int) { s.lists.maxAsked = n }

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
	now := app.Now()
	var tagID int64
	if q.Tag = users.TagName(q.Tag); q.Tag != "" {
		if tagID, err = users.FindTag(ctx, s.db, q.Tag); err != nil || tagID == 0 {
			return nil, 0, nil, 0, err
		}
	}
	if one, oneCount, err = s.ownerPage(ctx, q, tagID, now); err != nil {
		return
	}
	if twoCount, err = s.count(ctx, q, tagID, now); err != nil {
		return
	}
	if q.Page.Offset() < twoCount {
		two, err = s.page(ctx, q, tagID, now)
	}
	return
}
