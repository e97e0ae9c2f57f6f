package chat

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/onair/onair/app"
)

// Heartbeats: the server pings every pingEvery and drops a peer that has
// not answered (or sent anything) within pongWait.
var (
	pingEvery  = 25 * time.Second
	pongWait   = 60 * time.Second
	writeWait  = 10 * time.Second
	readLimit  = int64(4096)
	viewerKey  = "onair.chat.viewer"
	showIDKey  = "onair.chat.show"
	whoKey     = "onair.chat.who"
	anonCookie = "onair_viewer"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// apiSocket prepares GET /v1/shows/:id/chat/socket: the Bearer-token
// client joins as its user.
func (m *Module) apiSocket(c *fiber.Ctx) error {
	p := app.CurrentPrincipal(c)
	return m.prepareSocket(c, p, func() (Viewer, error) {
		u, err := m.users.Get(c.UserContext(), p.UserID)
		if err != nil {
			return Viewer{}, err
		}
		return Viewer{UserID: u.ID, Name: u.Name}, nil
	})
}

// webSocket prepares GET /ws/shows/:id for web pages: the signed-in user of
// the session cookie, or an anonymous viewer known by a UUID cookie.
func (m *Module) webSocket(c *fiber.Ctx) error {
	// The web socket rides on the session cookie, so only pages of this
	// site may open it (no cross-site WebSocket hijacking); clients that
	// send no Origin are not browsers and carry no one's cookie by accident.
	if origin := c.Get(fiber.HeaderOrigin); origin != "" && !sameOrigin(origin, m.core.Config.PublicURL) {
		return app.Forbidden("web sockets of this site open from its own pages only")
	}
	var p *app.Principal
	for _, mod := range m.core.Modules {
		if sr, ok := mod.(app.SessionReader); ok {
			if got, err := sr.SessionPrincipal(c); err == nil && got != nil {
				p = got
				break
			}
		}
	}
	if p != nil {
		return m.prepareSocket(c, p, func() (Viewer, error) {
			u, err := m.users.Get(c.UserContext(), p.UserID)
			if err != nil {
				return Viewer{}, err
			}
			return Viewer{UserID: u.ID, Name: u.Name}, nil
		})
	}
	id := c.Cookies(anonCookie)
	if !uuidPattern.MatchString(id) {
		id = uuid.NewString()
	}
	// An anonymous viewer is an empty principal: it sees public shows only.
	return m.prepareSocket(c, &app.Principal{}, func() (Viewer, error) {
		return Viewer{AnonID: id, Name: AnonymousName(id)}, nil
	})
}

// prepareSocket checks the show is visible to the viewer before upgrading.
func (m *Module) prepareSocket(c *fiber.Ctx, p *app.Principal, viewer func() (Viewer, error)) error {
	if !websocket.IsWebSocketUpgrade(c) {
		return &app.Error{Status: fiber.StatusUpgradeRequired, Code: "upgrade_required", Message: "this route speaks WebSocket"}
	}
	showID, err := showIDParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := m.shows.Visible(c.UserContext(), showID, p); err != nil {
		return err
	}
	v, err := viewer()
	if err != nil {
		return err
	}
	c.Locals(viewerKey, v)
	c.Locals(showIDKey, showID)
	c.Locals(whoKey, p)
	return c.Next()
}

// serveSocket runs one socket: it joins the room, writes the room's events
// and heartbeats, and reads only to notice the peer leaving.
func (m *Module) serveSocket(conn *websocket.Conn) {
	v, _ := conn.Locals(viewerKey).(Viewer)
	showID, _ := conn.Locals(showIDKey).(int64)
	ctx := m.ctx
	who, _ := conn.Locals(whoKey).(*app.Principal)
	if who == nil {
		who = &app.Principal{}
	}
	cl := m.hub.join(ctx, showID, v, who)
	defer m.hub.leave(ctx, showID, cl)

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		ticker := time.NewTicker(pingEvery)
		defer ticker.Stop()
		for {
			select {
			case msg := <-cl.send:
				conn.SetWriteDeadline(time.Now().Add(writeWait))
				if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
					cl.drop()
				}
			case msg := <-cl.presence:
				conn.SetWriteDeadline(time.Now().Add(writeWait))
				if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
					cl.drop()
				}
			case <-ticker.C:
				if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
					cl.drop()
				}
			case <-cl.gone:
				conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
				conn.Close()
				return
			case <-ctx.Done():
				cl.drop()
			}
		}
	}()

	conn.SetReadLimit(readLimit)
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			break
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
	}
	cl.drop()
	<-writerDone
}

// sameOrigin tells whether an Origin header names the site of publicURL.
func sameOrigin(origin, publicURL string) bool {
	o, err := url.Parse(origin)
	if err != nil {
		return false
	}
	p, err := url.Parse(publicURL)
	if err != nil {
		return false
	}
	return strings.EqualFold(o.Scheme, p.Scheme) && strings.EqualFold(o.Host, p.Host)
}
