package chat

import (
	"fmt"

	"github.com/onair/onair/app"
	"github.com/onair/onair/modules/users"
)

// View is the API form of a chat message.
type View struct {
	ID        int64         `json:"id"`
	ObjectURL string        `json:"object_url"`
	Message   string        `json:"message"`
	Position  string        `json:"position"`
	CreatedAt app.Timestamp `json:"created_at"`
	User      *users.View   `json:"user"`
}

// View renders a message; its User must be loaded.
func (s *Service) View(m *Message) *View {
	v := &View{
		ID:        m.ID,
		ObjectURL: fmt.Sprintf("%s/v1/shows/%d/chats/%d", s.public, m.ShowID, m.ID),
		Message:   m.Body,
		Position:  m.PositionString(),
		CreatedAt: app.Timestamp(m.CreatedAt),
	}
	if m.User != nil {
		v.User = users.NewView(s.public, m.User, users.ForChatAuthor)
	}
	return v
}
