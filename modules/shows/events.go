package shows

import (
	"context"
	"fmt"

	"github.com/onair/onair/app"
)

// Event types. "stopped" and "off" tell the live module to disconnect the
// publisher, "deleted" to drop the media; chat pushes show.updated on any.
const (
	EventCreated  = "created"
	EventLive     = "live"    // first go-live
	EventResumed  = "resumed" // publisher back inside the reconnect window
	EventStopped  = "stopped"
	EventArchived = "archived"
	EventUpdated  = "updated"
	EventOff      = "off" // taken off or restored: see Show.Off
	EventDeleted  = "deleted"
)

// Event is a committed change of a show. Show is shared by every
// subscriber and must be treated as read-only. By is the caller; nil is the
// system (live module, janitor).
type Event struct {
	Type string
	Show *Show
	By   *app.Principal
}

// Subscribe registers fn to be called synchronously after each committed
// change, in registration order. Modules subscribe in Provision. A
// subscriber that panics is logged and skipped; it should hand slow work to
// its own goroutine.
func (s *Service) Subscribe(fn func(ctx context.Context, ev Event)) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.subs = append(s.subs, fn)
}

func (s *Service) emit(ctx context.Context, ev Event) {
	s.subsMu.RLock()
	subs := s.subs[:len(s.subs):len(s.subs)]
	s.subsMu.RUnlock()
	for _, fn := range subs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("shows: event subscriber panicked", "event", ev.Type, "show_id", ev.Show.ID, "panic", fmt.Sprint(r))
				}
			}()
			fn(ctx, ev)
		}()
	}
}
