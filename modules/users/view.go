package users

import (
	"strconv"

	"github.com/onair/onair/app"
)

// View is the API form of a User. Which optional fields appear depends on
// where the user is shown (see ViewOptions); absent fields are omitted, not
// null.
type View struct {
	ID             int64         `json:"id"`
	URL            string        `json:"url"`
	ObjectURL      string        `json:"object_url"`
	Slug           string        `json:"slug"`
	Name           string        `json:"name"`
	Email          *string       `json:"email,omitempty"`
	Location       *string       `json:"location"`
	Description    *string       `json:"description"`
	CreatedAt      app.Timestamp `json:"created_at"`
	DJ             bool          `json:"dj"`
	Producer       bool          `json:"producer"`
	Featured       bool          `json:"featured"`
	Radio          *bool         `json:"radio,omitempty"`
	ImageURL       string        `json:"image_url"`
	CoverURL       string        `json:"cover_url"`
	Tags           *[]TagView    `json:"tags,omitempty"`
	FollowersCount *int          `json:"followers_count,omitempty"`
	Registered     *bool         `json:"registered,omitempty"`
}

// ViewOptions say which optional fields a View carries, per the spec's
// presence rules:
//   - Email: only the owner object of POST/PUT /shows and stop responses;
//   - Radio: everywhere except users embedded in show reads;
//   - Tags: GET /users and GET /users/:id;
//   - Followers and Registered: chat_users entries.
type ViewOptions struct {
	Email, Radio, Tags, Followers, Registered bool
}

// Common option sets.
var (
	// ForUserRead is GET /users and GET /users/:id.
	ForUserRead = ViewOptions{Radio: true, Tags: true}
	// ForShowRead is the owner embedded in show lists and single reads.
	ForShowRead = ViewOptions{}
	// ForShowWrite is the owner embedded in POST/PUT /shows and stop.
	ForShowWrite = ViewOptions{Email: true, Radio: true}
	// ForChatUser is a registered entry of chat_users.
	ForChatUser = ViewOptions{Radio: true, Followers: true, Registered: true}
	// ForChatAuthor is the author embedded in a chat message.
	ForChatAuthor = ViewOptions{Radio: true}
)

// View renders u; URLs are absolute on the service's public URL.
func (s *Service) View(u *User, o ViewOptions) *View {
	return NewView(s.publicURL, u, o)
}

// NewView renders u for the given public base URL.
func NewView(publicURL string, u *User, o ViewOptions) *View {
	id := strconv.FormatInt(u.ID, 10)
	v := &View{
		ID:          u.ID,
		URL:         publicURL + "/" + u.Slug,
		ObjectURL:   publicURL + "/v1/users/" + id,
		Slug:        u.Slug,
		Name:        u.Name,
		Location:    u.Location,
		Description: u.Description,
		CreatedAt:   app.Timestamp(u.CreatedAt),
		DJ:          u.DJ,
		Producer:    u.Producer,
		Featured:    u.Featured,
	}
	// Uploaded images replace the generated ones (images.go).
	if u.AvatarKey != nil {
		v.ImageURL = publicURL + "/media/" + *u.AvatarKey
	} else {
		v.ImageURL = publicURL + "/media/users/" + id + "/avatar.svg"
	}
	if u.CoverKey != nil {
		v.CoverURL = publicURL + "/media/" + *u.CoverKey
	} else {
		v.CoverURL = publicURL + "/media/users/" + id + "/cover.svg"
	}
	if o.Email {
		email := u.Email
		v.Email = &email
	}
	if o.Radio {
		radio := u.Radio
		v.Radio = &radio
	}
	if o.Tags {
		tags := TagViews(u.Tags)
		v.Tags = &tags
	}
	if o.Followers {
		n := u.FollowersCount
		v.FollowersCount = &n
	}
	if o.Registered {
		yes := true
		v.Registered = &yes
	}
	return v
}
