package pages

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/onair/onair/modules/chat"
)

// chatLine is one message of a show's chat as the page renders it.
type chatLine struct {
	ID, Position, Name, UserID, Badge string
	Time                              time.Time
	Parts                             []textPart
	// Ban: the viewer may ban the author (a moderator, not the author).
	Ban bool
}

// textPart is a run of a message's text, or a link in it.
type textPart struct{ Text, URL string }

// linkPattern finds the http and https addresses in a message; nothing
// else becomes a link (no javascript:, data: or bare domains).
var linkPattern = regexp.MustCompile(`\bhttps?://[^\s<>"'\x60]+`)

// linkify splits text into plain runs and links. Trailing punctuation is
// the sentence's, not the link's.
func linkify(text string) []textPart {
	var parts []textPart
	last := 0
	for _, loc := range linkPattern.FindAllStringIndex(text, -1) {
		start, end := loc[0], loc[1]
		for end > start && strings.ContainsRune(".,;:!?)]}'", rune(text[end-1])) {
			end--
		}
		if end-start <= len("https://") {
			continue
		}
		if start > last {
			parts = append(parts, textPart{Text: text[last:start]})
		}
		parts = append(parts, textPart{Text: text[start:end], URL: text[start:end]})
		last = end
	}
	if last < len(text) {
		parts = append(parts, textPart{Text: text[last:]})
	}
	return parts
}

// line renders a message for a viewer; ownerID is the show's owner, mod
// whether the viewer moderates this chat and viewerID who they are.
func line(msg *chat.Message, ownerID int64, mod bool, viewerID int64) chatLine {
	l := chatLine{
		ID: strconv.FormatInt(msg.ID, 10), Position: msg.PositionString(), UserID: strconv.FormatInt(msg.UserID, 10),
		Time: msg.CreatedAt, Parts: linkify(msg.Body), Badge: chat.Badge(msg.User, ownerID),
		Ban: mod && msg.UserID != viewerID && msg.UserID != ownerID,
	}
	if msg.User != nil {
		l.Name = msg.User.Name
	}
	return l
}
