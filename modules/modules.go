// Package modules enables OnAir's modules: each blank import registers one
// module from its init(). Adding a module is its folder plus one line here.
// The list lives here rather than in main.go so that the tests boot exactly
// the set of modules the binary runs.
package modules

import (
	_ "github.com/onair/onair/admin"
	_ "github.com/onair/onair/modules/chat"
	_ "github.com/onair/onair/modules/downloads"
	_ "github.com/onair/onair/modules/live"
	_ "github.com/onair/onair/modules/notify"
	_ "github.com/onair/onair/modules/pages"
	_ "github.com/onair/onair/modules/podcast"
	_ "github.com/onair/onair/modules/restream"
	_ "github.com/onair/onair/modules/shows"
	_ "github.com/onair/onair/modules/stats"
	_ "github.com/onair/onair/modules/users"
	_ "github.com/onair/onair/modules/webhooks"
)
