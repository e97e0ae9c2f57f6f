package pages

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/shows"
)

// Pages that follow the show: the studio's show page and the home page
// learn of a show going live, stopping and being archived from the show
// events every node gets (shows.Service.Subscribe: this node's changes at
// once, the others' through Redis), sent to them as server-sent events,
// and fetch their changed parts again (onair.js, data-follow). The show
// page learns the same from its chat socket's show.updated events.
//
//   - The studio's health stream (health.go) sends "event: state" with the
//     show's state (stateKey) as it connects and at each event of the show.
//   - GET /events/shows, for the home page, sends "event: generation"
//     with the shows' data generation as it connects, and "event: shows"
//     at each event that moves a public show in or out of a list.
//
// A stream ends after healthFor and the browser connects again; what it
// missed meanwhile shows in the state or generation it gets on
// connecting, which the page compares with its own.

// follower is one open stream: the events of one show (any visibility:
// the stream checked its reader may see it), or of every public show
// (show 0).
type follower struct {
	show int64
	ch   chan shows.Event // one pending at most: a page fetches itself once
}

// following fans show events out to the open streams of this node.
type following struct {
	mu   sync.Mutex
	subs map[*follower]struct{}
}

func (f *following) add(show int64) *follower {
	fl := &follower{show: show, ch: make(chan shows.Event, 1)}
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[*follower]struct{}{}
	}
	f.subs[fl] = struct{}{}
	f.mu.Unlock()
	return fl
}

func (f *following) remove(fl *follower) {
	f.mu.Lock()
	delete(f.subs, fl)
	f.mu.Unlock()
}

// listMoves are the events that move a show in or out of a home page list.
var listMoves = map[string]bool{
	shows.EventCreated: true, shows.EventLive: true, shows.EventResumed: true, shows.EventStopped: true,
	shows.EventArchived: true, shows.EventOff: true, shows.EventDeleted: true,
}

// event hands a show event to the streams that want it, never blocking:
// a stream with an event pending keeps that one (the page fetches itself
// anew either way).
func (f *following) event(_ context.Context, ev shows.Event) {
	if ev.Show == nil {
		return
	}
	public := !ev.Show.Private && !ev.Show.Off || ev.Type == shows.EventOff || ev.Type == shows.EventDeleted
	f.mu.Lock()
	defer f.mu.Unlock()
	for fl := range f.subs {
		if fl.show == ev.Show.ID || fl.show == 0 && public && listMoves[ev.Type] {
			select {
			case fl.ch <- ev:
			default:
			}
		}
	}
}

// stateKey is a show's state after an event, as the pages compare it
// (state.key) at now, or "deleted".
func stateKey(ev shows.Event, now time.Time) string {
	if ev.Type == shows.EventDeleted {
		return "deleted"
	}
	return stateOf(ev.Show, now).key()
}

// showEvents is GET /events/shows: the home page's stream of public show
// changes.
func (m *Module) showEvents(c *fiber.Ctx, _ *visitor) error {
	if c.Get(fiber.HeaderAccept) != "text/event-stream" {
		return fiber.NewError(fiber.StatusNotAcceptable, "this is an event stream: ask with Accept: text/event-stream")
	}
	gen, err := m.shows.Lists.Generation(c.UserContext())
	if err != nil {
		return err
	}
	release, err := app.HoldClient(c)
	if err != nil {
		return err
	}
	fl := m.following.add(0)
	streamEvents(c, func() { m.following.remove(fl); release() }, func(w *bufio.Writer) error {
		_, err := fmt.Fprintf(w, "event: generation\ndata: %d\n\n", gen)
		return err
	}, fl.ch, func(w *bufio.Writer, ev shows.Event) error {
		_, err := fmt.Fprintf(w, "event: shows\ndata: {\"id\":%d,\"type\":%q}\n\n", ev.Show.ID, ev.Type)
		return err
	}, nil)
	return nil
}

// streamEvents runs an event stream for healthFor: first, then each event
// of ch with send, and tick (when not nil) every healthEvery. done runs
// when the stream ends.
func streamEvents(c *fiber.Ctx, done func(), first func(*bufio.Writer) error, ch <-chan shows.Event,
	send func(*bufio.Writer, shows.Event) error, tick func(*bufio.Writer) error) {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set("X-Accel-Buffering", "no")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer done()
		end := time.NewTimer(healthFor)
		defer end.Stop()
		every := time.NewTicker(healthEvery)
		defer every.Stop()
		fmt.Fprintf(w, "retry: %d\n\n", healthEvery.Milliseconds())
		if err := first(w); err != nil {
			return
		}
		if tick != nil {
			if err := tick(w); err != nil {
				return
			}
		}
		for {
			// A closed connection shows here: the browser left.
			if err := w.Flush(); err != nil {
				return
			}
			var err error
			select {
			case <-end.C:
				return
			case ev := <-ch:
				err = send(w, ev)
			case <-every.C:
				if tick == nil {
					_, err = w.WriteString(": keep-alive\n\n")
				} else {
					err = tick(w)
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// stateLine is the state event of the studio's health stream.
func stateLine(w *bufio.Writer, state string) error {
	_, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", strconv.Quote(state))
	return err
}
