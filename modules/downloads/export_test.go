package downloads

import "context"

// MakeLogged makes the show's downloads as the sweep does, recording a
// failure.
func (m *Module) MakeLogged(ctx context.Context, id int64) { m.makeLogged(ctx, id) }
