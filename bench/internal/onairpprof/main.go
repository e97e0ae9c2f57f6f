// Command onairpprof is the onair binary with net/http/pprof on
// $ONAIR_BENCH_PPROF_ADDR, for benchmarks run with -profile: the server
// under load is profiled as its own process, and production code carries
// no profiling endpoint.
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"

	"github.com/onair/onair/app"
	_ "github.com/onair/onair/modules"
)

func main() {
	if addr := os.Getenv("ONAIR_BENCH_PPROF_ADDR"); addr != "" {
		go http.ListenAndServe(addr, nil)
	}
	app.Main()
}
