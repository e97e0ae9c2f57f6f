package live

import "time"

// SignToken and ValidToken expose the media signer to the tests of other
// nodes' agreement on it.
func (m *Module) SignToken(showID int64, now time.Time) string { return m.signer.token(showID, now) }

func (m *Module) ValidToken(showID int64, token string, now time.Time) bool {
	return m.signer.valid(showID, token, now)
}
