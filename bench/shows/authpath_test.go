package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// BenchmarkStatic measures the server's own cost of the two static-JSON
// scenarios of this benchmark, without the network or the client: the
// request goes straight into the Fiber app that app.NewServer builds
// (every module, the real middleware, the access log at info into
// io.Discard as in the benchmark), on SQLite. The difference between the
// two is the /v1 path: CORS, the auth throttle, the token check (its
// cache warm), the rate limiter and the routes of the /v1 group.
//
//	go test -run '^$' -bench Static -benchmem ./bench/shows
func BenchmarkStatic(b *testing.B) {
	dir := b.TempDir()
	env := map[string]string{
		"ONAIR_DATABASE_URL": "sqlite://" + filepath.Join(dir, "onair.db"), "ONAIR_DATA_DIR": dir,
		"ONAIR_PUBLIC_URL": "http://127.0.0.1:1", "ONAIR_HTTP_ADDR": "127.0.0.1:0", "ONAIR_RTMP_ADDR": "127.0.0.1:0",
		"ONAIR_RATE_LIMIT": "1000000000",
	}
	cfg, err := app.LoadConfig(flag.NewFlagSet("bench", flag.ContinueOnError), nil, func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	core, err := app.Boot(ctx, cfg, app.BootOptions{Log: slog.New(discardInfo{slog.NewTextHandler(os.Stderr, nil)}), Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { core.Close() })
	svc := users.NewService(core.DB, cfg.PublicURL)
	u, err := svc.Create(ctx, users.NewUser{Name: "Bench", Email: "bench@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	token, _, err := svc.IssueToken(ctx, u.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := app.NewServer(core)
	if err != nil {
		b.Fatal(err)
	}
	h := srv.App.Handler()
	bearer := []byte("Bearer " + token)
	for _, sc := range []struct{ name, path string }{
		{"ceiling", "/static.json"},
		{"v1auth", "/v1/static.json"},
	} {
		// serve answers one request; Errorf, not Fatalf: it also runs on
		// RunParallel's goroutines.
		serve := func(b *testing.B, ctx *fasthttp.RequestCtx) bool {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.ResetUserValues() // as fasthttp does between requests
			ctx.Request.Header.SetMethod("GET")
			ctx.Request.SetRequestURI(sc.path)
			ctx.Request.Header.SetBytesV("Authorization", bearer)
			h(ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Errorf("%s: %d %s", sc.path, ctx.Response.StatusCode(), ctx.Response.Body())
				return false
			}
			return true
		}
		b.Run(sc.name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			if !serve(b, &ctx) { // the token cache is warm from here on
				return
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := selfCPU()
			for range b.N {
				if !serve(b, &ctx) {
					return
				}
			}
			// CPU time a request (the process's, GC included): unlike
			// ns/op it does not count waiting for a core on a busy machine.
			b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		// Every core at once, as under load: locks shared by requests
		// (the limiter's, the token cache's) show here.
		b.Run(sc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := selfCPU()
			b.RunParallel(func(pb *testing.PB) {
				var ctx fasthttp.RequestCtx
				for pb.Next() && serve(b, &ctx) {
				}
			})
			b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

type discardInfo struct{ slog.Handler }

func (d discardInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return nil
	}
	return d.Handler.Handle(ctx, r)
}
