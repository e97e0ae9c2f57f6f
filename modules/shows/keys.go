package shows

import (
	"context"
	"crypto/subtle"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/onair/onair/app"
)

// Keys are the shows' stream keys: the live module's check of a
// publisher's key (Authorize) and the owner's rotation (Regenerate).
type Keys struct {
	db *bun.DB
	// reader checks the keys (app.Core.ReadDB): a publisher's check does
	// not queue behind the shows going live on SQLite's one writer. A
	// key Regenerate replaced is refused by every check that begins
	// after it returns.
	reader *bun.DB
	clock  *app.Clock
	access access
	// loader batches the key checks.
	loader keyLoader
}

// Regenerate gives the show a new stream key and returns the show with
// it; the old key is refused from then on. Only the owner may (the same
// Casbin right as update): a leaked key is the owner's to rotate, and staff
// take a show off instead. A publisher already connected keeps streaming;
// a reconnect must use the new key. A show the caller may not see is
// ErrNotFound, as everywhere.
func (k *Keys) Regenerate(ctx context.Context, id int64, by *app.Principal) (*Show, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	err = k.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		sh, err := lockShow(ctx, tx, id)
		if err != nil {
			return err
		}
		if by == nil || !canView(sh, by) {
			return ErrNotFound
		}
		if err := k.access.can(by, sh, "update"); err != nil {
			return app.Forbidden("only the owner of the show may regenerate its stream key")
		}
		sh.StreamKey = streamKey(sh.ID, secret)
		sh.UpdatedAt = k.clock.Stamp()
		_, err = tx.NewUpdate().Model(sh).Column("stream_key", "updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return nil, wrap("regenerate key", id, err)
	}
	return getShow(ctx, k.db, id)
}

// Authorize checks a stream key in constant time and returns its show. A
// key that is malformed, wrong, or of a complete, deleted or off show is
// ErrRefused.
//
// The key names its show's id, so the check is one read by primary key.
// When many publishers connect at once (every encoder reconnecting after
// a node restart) their reads are batched: at most keyLookups queries run
// at a time, and each reads the shows of every key that arrived while the
// previous one ran. So the check costs a few queries, not one each, and
// does not wait its turn behind hundreds of others for a database
// connection.
func (k *Keys) Authorize(ctx context.Context, streamKey string) (*Show, error) {
	id, ok := keyShowID(streamKey)
	if !ok {
		return nil, ErrRefused
	}
	sh, err := k.loader.load(ctx, k.reader, id)
	if err != nil {
		return nil, fmt.Errorf("shows: authorize: %w", err)
	}
	if sh == nil || subtle.ConstantTimeCompare([]byte(sh.StreamKey), []byte(streamKey)) != 1 {
		return nil, ErrRefused
	}
	if sh.Complete || sh.Off {
		return nil, ErrRefused
	}
	return sh, nil
}

// Bounds of the key reads.
const (
	// keyLookups is how many key reads run at once.
	keyLookups = 2
	// keyBatch is the most shows one read asks for.
	keyBatch = 256
	// keyLookupTimeout bounds a read, which runs detached from the
	// publishers waiting on it (one that leaves does not fail the others).
	keyLookupTimeout = 10 * time.Second
)

// keyLoader batches the reads of Authorize.
type keyLoader struct {
	mu      sync.Mutex
	waiting map[int64][]chan<- keyAnswer // ids not yet in a read, and who waits for each
	running int                          // reads under way
}

type keyAnswer struct {
	sh  *Show // nil: no such show
	err error
}

// load returns the show id (nil if there is none), read in the next batch.
func (l *keyLoader) load(ctx context.Context, db bun.IDB, id int64) (*Show, error) {
	ch := make(chan keyAnswer, 1)
	l.mu.Lock()
	if l.waiting == nil {
		l.waiting = map[int64][]chan<- keyAnswer{}
	}
	l.waiting[id] = append(l.waiting[id], ch)
	if l.running < keyLookups {
		l.running++
		go l.run(db)
	}
	l.mu.Unlock()
	select {
	case a := <-ch:
		return a.sh, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run reads batches until no id waits.
func (l *keyLoader) run(db bun.IDB) {
	for {
		l.mu.Lock()
		if len(l.waiting) == 0 {
			l.running--
			l.mu.Unlock()
			return
		}
		batch := make(map[int64][]chan<- keyAnswer, min(len(l.waiting), keyBatch))
		for id, chs := range l.waiting {
			if len(batch) == keyBatch {
				break
			}
			batch[id] = chs
			delete(l.waiting, id)
		}
		l.mu.Unlock()
		ids := make([]int64, 0, len(batch))
		for id := range batch {
			ids = append(ids, id)
		}
		var found []Show
		ctx, cancel := context.WithTimeout(context.Background(), keyLookupTimeout)
		err := db.NewSelect().Model(&found).Where("s.id IN (?)", bun.List(ids)).Scan(ctx)
		cancel()
		byID := make(map[int64]*Show, len(found))
		for i := range found {
			byID[found[i].ID] = &found[i]
		}
		for id, chs := range batch {
			for i, ch := range chs {
				a := keyAnswer{sh: byID[id], err: err}
				if a.sh != nil && i > 0 {
					c := *a.sh // each caller gets its own copy
					a.sh = &c
				}
				ch <- a
			}
		}
	}
}
