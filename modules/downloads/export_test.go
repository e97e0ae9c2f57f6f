package downloads

import (
	"context"
	"time"
)

// MakeLogged makes the show's downloads as the sweep does, recording a
// failure.
func (m *Module) MakeLogged(ctx context.Context, id int64) { m.makeLogged(ctx, id) }

// BeforeStore runs fn before each file of a show is stored; its error
// fails the store.
func (m *Module) BeforeStore(fn func(id int64) error) { m.beforeStore = fn }

// Sweep runs one sweep now, beside the worker's.
func (m *Module) Sweep(ctx context.Context) SweepStats { return m.sweep(ctx) }

// Sweeps is how many sweeps the node finished.
func (m *Module) Sweeps() int { return int(m.metrics.swept.Load()) }

// DropEvents makes the node drop every archived event, as a full queue does.
func (m *Module) DropEvents(drop bool) { m.dropEvents.Store(drop) }

// DueQuery is the SQL of one page of the sweep's due shows.
func (m *Module) DueQuery(start time.Time) string { return m.dueQuery(start).String() }

// Constants the tests move time by.
const (
	SweepEvery  = sweepEvery
	MaxAttempts = maxAttempts
	SweepPage   = sweepPage
)

// AddDueAt is the migration 0002_due_at.
var AddDueAt = addDueAt
