package live

import (
	"sync"

	"github.com/onair/onair/modules/live/streamcore"
)

// Publication is a show's publication as other modules see it once its
// tracks are decided: they may subscribe readers of their own to its
// stream core (docs/modules.md, "How a reader plugs into the core"). The
// readers are closed when the publisher leaves.
type Publication struct {
	ShowID int64
	// UserID is the show's owner.
	UserID int64
	Stream *streamcore.Stream
}

// publishHooks are the functions other modules registered with OnPublish.
type publishHooks struct {
	mu  sync.Mutex
	fns []func(Publication)
}

// OnPublish registers fn, called for each publication this node ingests,
// once its tracks are decided and the HLS packager reads it. fn runs on
// the publisher's goroutine: it must return at once (a reader it adds
// from another goroutine later starts at the next keyframe). Modules
// register in Provision.
func (m *Module) OnPublish(fn func(Publication)) {
	m.hooks.mu.Lock()
	defer m.hooks.mu.Unlock()
	m.hooks.fns = append(m.hooks.fns, fn)
}

// published tells the registered modules about s.
func (m *Module) published(s *stream) {
	m.hooks.mu.Lock()
	fns := append([](func(Publication)){}, m.hooks.fns...)
	m.hooks.mu.Unlock()
	for _, fn := range fns {
		fn(Publication{ShowID: s.showID, UserID: s.userID, Stream: s.core})
	}
}
