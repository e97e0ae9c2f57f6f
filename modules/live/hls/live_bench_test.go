package hls

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkLiveRelease: one publication releases 500 waiters of a
// playlist, as a show's crowd of blocking reloads (bench/live
// -blocking-clients); one op is the publication and every release.
func BenchmarkLiveRelease(b *testing.B) {
	const crowd = 500
	l := NewLive()
	ctx := context.Background()
	l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 0, Target: 2, PartTarget: 0.22})
	done := make(chan struct{}, crowd)
	var started atomic.Int32
	part := 1
	for b.Loop() {
		b.StopTimer()
		for range crowd {
			go func(part int) {
				started.Add(1)
				if _, _, err := l.AwaitPosition(ctx, PlaylistAV, 5, part); err != nil {
					b.Error(err)
				}
				done <- struct{}{}
			}(part)
		}
		// Until all have started (and, but for a few, are waiting).
		for started.Load() < crowd {
			runtime.Gosched()
		}
		runtime.Gosched()
		started.Store(0)
		b.StartTimer()
		l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: part, Target: 2, PartTarget: 0.22})
		for range crowd {
			<-done
		}
		part++
		if part > 8 {
			part = 1
			l.publish(PlaylistAV, Position{Segments: 5, MSN: 5, Part: 0, Target: 2, PartTarget: 0.22})
		}
	}
}
