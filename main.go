// Command onair serves OnAir: live shows, chat and users behind the v1 REST
// API, with the RTMP ingest, HLS media and the admin console.
package main

import (
	"github.com/onair/onair/app"

	// The modules of this build; see modules/modules.go.
	_ "github.com/onair/onair/modules"
)

func main() { app.Main() }
