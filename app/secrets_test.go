package app_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/onair/onair/internal/onairtest"
)

// Two nodes asking for new secrets at the same moment store one value for
// each: the primary key refuses the second insert, which reads the first.
func TestSecretsAgreeUnderRace(t *testing.T) {
	onairtest.EachBackend(t, func(t *testing.T, backend string) {
		t.Parallel()
		a := onairtest.New(t, onairtest.Options{Backend: backend})
		b := onairtest.New(t, onairtest.Options{DatabaseURL: a.Core.Config.DatabaseURL})
		for _, env := range []*onairtest.Env{a, b} { // serving, so the cleanup stops a started server
			env.Do("GET", "/healthz", "", nil).Expect(t, 200)
		}
		const n = 20
		got := [2][n][]byte{}
		errs := make(chan error, 2*n)
		var wg sync.WaitGroup
		for i, env := range []*onairtest.Env{a, b} {
			for j := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					v, err := env.Core.Secret(context.Background(), fmt.Sprintf("race.%d", j))
					if err != nil {
						errs <- err
						return
					}
					got[i][j] = v
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("secret: %v", err)
		}
		for j := range n {
			if len(got[0][j]) != 32 || !bytes.Equal(got[0][j], got[1][j]) {
				t.Fatalf("race.%d: nodes got %x and %x", j, got[0][j], got[1][j])
			}
		}
		again, err := a.Core.Secret(context.Background(), "race.0")
		if err != nil || !bytes.Equal(again, got[0][0]) {
			t.Fatalf("race.0 changed on a second read: %x, %v", again, err)
		}
		if _, err := a.Core.Secret(context.Background(), ""); err == nil {
			t.Fatal("an empty secret name is accepted")
		}
	})
}
