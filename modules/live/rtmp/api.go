package rtmp

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Handler decides who may publish and receives what they send.
type Handler interface {
	// Publish is asked when a client publishes; an error refuses it and
	// the connection is closed. It runs on the connection's goroutine, so
	// a slow answer delays only that publisher; ctx is cancelled if the
	// connection ends meanwhile. The admission deadline does not run
	// while Publish decides: Publish bounds its own work. A *StatusError is reported to the client
	// as it says; other errors wrapping ErrUnauthorized as
	// NetStream.Publish.Unauthorized (and counted by the stream key
	// throttle), all others as NetStream.Publish.BadName. The text of an
	// error that is not a *StatusError is never sent.
	Publish(ctx context.Context, req PublishRequest) (Sink, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req PublishRequest) (Sink, error)

// Publish calls f.
func (f HandlerFunc) Publish(ctx context.Context, req PublishRequest) (Sink, error) {
	return f(ctx, req)
}

// PublishRequest describes a client asking to publish.
type PublishRequest struct {
	// App is the application name from connect, e.g. "live" for
	// rtmp://host/live/KEY, without any query string.
	App string
	// Key is the publish name up to any '?', i.e. the stream key.
	Key string
	// Query is what followed '?' in the publish name, if anything
	// (ffmpeg and some encoders pass extra parameters this way).
	Query string
	// RemoteAddr is the publisher's address.
	RemoteAddr net.Addr
	// Disconnect cuts this publisher off: the connection is closed and the
	// Sink's Close receives reason (ErrDisconnected when nil). It returns
	// at once, without waiting for Close; it is safe to call from any
	// goroutine, any number of times, before or after Publish returns.
	// This is how a caller stops a stream, or replaces a half-open
	// connection when the same key connects again.
	Disconnect func(reason error)
}

// Sink receives one publication. Its methods are called from the
// connection's goroutine, one at a time, never concurrently.
type Sink interface {
	// Metadata receives onMetaData (from @setDataFrame or sent directly).
	Metadata(meta map[string]any)
	// Video and Audio receive FLV tag bodies with the message timestamp
	// unwrapped to an int64 of milliseconds (see Unwrapper). Audio and
	// video share one timeline. The body is valid only during the call:
	// the server reuses its memory for the next message, so a Sink that
	// keeps it copies it.
	// An error disconnects the publisher and is passed to Close; a
	// *StatusError is first sent to the client as an onStatus error.
	Video(ts int64, body []byte) error
	Audio(ts int64, body []byte) error
	// Close is called exactly once when the publisher leaves or is cut
	// off: err is nil after a clean unpublish (FCUnpublish, deleteStream,
	// closeStream), otherwise the reason, such as io.EOF, a timeout, the
	// reason given to Disconnect, or ErrServerClosed.
	Close(err error)
}

// Errors reported by the server.
var (
	// ErrServerClosed is returned by Serve after Close, and given to the
	// Sinks of publishers cut off by Close.
	ErrServerClosed = errors.New("rtmp: server closed")
	// ErrDisconnected is the reason given to Sink.Close when Disconnect
	// was called with a nil reason.
	ErrDisconnected = errors.New("rtmp: publisher disconnected")
	// ErrUnauthorized may be wrapped by Handler errors to report
	// NetStream.Publish.Unauthorized instead of BadName.
	ErrUnauthorized = errors.New("rtmp: unauthorized")
	// errRefused ends a connection whose publish was refused.
	errRefused = errors.New("rtmp: publish refused")
)

// StatusError refuses a publication with an onStatus error the client
// shows its user: FFmpeg prints the description as "Server error: …", OBS
// logs the code and the description. Keep the description short (FFmpeg
// reads 255 bytes of it) and say what to change.
type StatusError struct {
	Code        string // e.g. NetStream.Publish.Rejected
	Description string
	Err         error // the cause, for logs; never sent
}

func (e *StatusError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rtmp: %s: %s: %v", e.Code, e.Description, e.Err)
	}
	return fmt.Sprintf("rtmp: %s: %s", e.Code, e.Description)
}

func (e *StatusError) Unwrap() error { return e.Err }
