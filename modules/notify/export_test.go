package notify

// UnsubscribePath is the one-click link's path of the follow, as a mail
// carries it.
func UnsubscribePath(m *Module, follower, followed int64) string {
	return "/unsubscribe/" + m.signer.token(follower, followed)
}
