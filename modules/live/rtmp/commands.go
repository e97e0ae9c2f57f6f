package rtmp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/onair/onair/modules/live/amf0"
)

func (c *conn) command(m *Message, payload []byte) error {
	vals, err := amf0.DecodeAll(payload)
	if len(vals) == 0 {
		c.log.Debug("rtmp command undecodable", "err", err)
		return nil
	}
	name, _ := vals[0].(string)
	var txn float64
	if len(vals) > 1 {
		txn, _ = vals[1].(float64)
	}
	args := vals[min(len(vals), 2):] // command object, then arguments
	switch name {
	case "connect":
		return c.connect(txn, args)
	case "releaseStream":
		return c.result(txn, nil, amf0.Undefined{})
	case "FCPublish":
		if err := c.send(c.commandMessage(0, "onFCPublish", 0, nil, amf0.Object{
			{Key: "code", Value: "NetStream.Publish.Start"},
			{Key: "description", Value: "FCPublish received."},
		})); err != nil {
			return err
		}
		return c.result(txn, nil, amf0.Undefined{})
	case "createStream":
		id := c.nextStreamID
		c.nextStreamID++
		return c.result(txn, nil, float64(id))
	case "publish":
		return c.publish(m.StreamID, txn, args)
	case "FCUnpublish", "deleteStream", "closeStream":
		if c.pub != nil {
			c.log.Info("rtmp unpublish", "command", name)
			c.endPublication(nil)
		}
		if name == "FCUnpublish" && txn > 0 {
			return c.result(txn, nil, amf0.Undefined{})
		}
		return nil
	default:
		if txn > 0 {
			return c.send(c.commandMessage(0, "_error", txn, nil, amf0.Object{
				{Key: "level", Value: "error"},
				{Key: "code", Value: "NetConnection.Call.Failed"},
				{Key: "description", Value: "Method not supported."},
			}))
		}
		return nil
	}
}

func (c *conn) commandMessage(streamID uint32, name string, txn float64, args ...any) *Message {
	vals := append([]any{name, txn}, args...)
	// Encoding only fails on unsupported Go types, which would be a bug here.
	p, err := amf0.Encode(nil, vals...)
	if err != nil {
		panic(fmt.Sprintf("rtmp: encode %s: %v", name, err))
	}
	csid := uint32(csidCommand)
	if streamID != 0 {
		csid = csidStatus
	}
	return &Message{ChunkStreamID: csid, Type: TypeCommandAMF0, StreamID: streamID, Payload: p}
}

func (c *conn) result(txn float64, args ...any) error {
	if txn <= 0 {
		return nil // the client asked for no answer
	}
	return c.send(c.commandMessage(0, "_result", txn, args...))
}

func (c *conn) connect(txn float64, args []any) error {
	var obj map[string]any
	if len(args) > 0 {
		obj, _ = args[0].(map[string]any)
	}
	app, _ := obj["app"].(string)
	// "live?token=x" and "live/" both mean the application "live".
	app, _, _ = strings.Cut(app, "?")
	c.app = strings.Trim(app, "/")
	c.connected = true
	encoding, _ := obj["objectEncoding"].(float64)

	if err := c.cw.WriteMessage(WindowAckSizeMessage(serverWindowAckSize)); err != nil {
		return err
	}
	if err := c.cw.WriteMessage(SetPeerBandwidthMessage(serverPeerBandwidth, 2)); err != nil {
		return err
	}
	if err := c.cw.WriteMessage(SetChunkSizeMessage(serverChunkSize)); err != nil {
		return err
	}
	if err := c.cw.SetChunkSize(serverChunkSize); err != nil {
		return err
	}
	return c.send(c.commandMessage(0, "_result", txn,
		amf0.Object{
			{Key: "fmsVer", Value: "FMS/3,0,1,123"},
			{Key: "capabilities", Value: 31.0},
		},
		amf0.Object{
			{Key: "level", Value: "status"},
			{Key: "code", Value: "NetConnection.Connect.Success"},
			{Key: "description", Value: "Connection succeeded."},
			{Key: "objectEncoding", Value: encoding},
		}))
}

func (c *conn) onStatus(streamID uint32, level, code, desc string) *Message {
	return c.commandMessage(streamID, "onStatus", 0, nil, amf0.Object{
		{Key: "level", Value: level},
		{Key: "code", Value: code},
		{Key: "description", Value: desc},
	})
}

func (c *conn) publish(streamID uint32, txn float64, args []any) error {
	var name string
	if len(args) > 1 {
		name, _ = args[1].(string)
	}
	key, query, _ := strings.Cut(name, "?")
	switch {
	case !c.connected:
		return c.refuse(streamID, "NetStream.Publish.BadName", "connect first", nil)
	case c.published:
		return c.refuse(streamID, "NetStream.Publish.BadName", "already publishing", nil)
	case key == "":
		return c.refuse(streamID, "NetStream.Publish.BadName", "missing stream key", nil)
	}
	if err := c.srv.publisherRoom(c); err != nil {
		return c.refuseWith(streamID, err)
	}
	now := time.Now()
	if wait := c.srv.throttled(c.addr, key, now); wait > 0 {
		c.srv.counts.throttled.Add(1)
		return c.refuseWith(streamID, &StatusError{
			Code:        "NetStream.Publish.Unauthorized",
			Description: fmt.Sprintf("Too many refused attempts with this stream key; retry in %d s.", int(wait.Seconds())+1),
		})
	}
	req := PublishRequest{
		App:        c.app,
		Key:        key,
		Query:      query,
		RemoteAddr: c.remote,
		Disconnect: func(reason error) {
			if reason == nil {
				reason = ErrDisconnected
			}
			c.kill(reason)
		},
	}
	if !c.srv.deciding(c) {
		// Dropped meanwhile (evicted, or the deadline passed).
		if err := context.Cause(c.ctx); err != nil {
			return err
		}
		return ErrAdmissionTimeout
	}
	sink, err := c.srv.Handler.Publish(c.ctx, req)
	if err == nil && sink == nil {
		err = errors.New("rtmp: handler returned no sink")
	}
	if err != nil {
		if errors.Is(err, ErrUnauthorized) {
			c.srv.keyResult(c.addr, key, false, now)
		}
		var se *StatusError
		switch {
		case errors.As(err, &se):
			return c.refuseWith(streamID, err)
		case errors.Is(err, ErrUnauthorized):
			return c.refuse(streamID, "NetStream.Publish.Unauthorized", "Publish refused.", err)
		default:
			return c.refuse(streamID, "NetStream.Publish.BadName", "Publish refused.", err)
		}
	}
	c.srv.keyResult(c.addr, key, true, now)
	c.pub = &publication{streamID: streamID, sink: sink}
	c.published = true
	if err := c.srv.promote(c); err != nil {
		return c.refuseWith(streamID, err)
	}
	if c.ctx.Err() != nil {
		// Disconnect was called while the handler was deciding.
		return context.Cause(c.ctx)
	}
	c.log.Info("rtmp publish", "app", c.app)
	return c.send(
		UserControlMessage(EventStreamBegin, streamID),
		c.onStatus(streamID, "status", "NetStream.Publish.Start", "Publishing "+key+"."),
	)
}

// refuseWith refuses with err's status when it is a *StatusError; other
// errors end the connection without a word.
func (c *conn) refuseWith(streamID uint32, err error) error {
	var se *StatusError
	if !errors.As(err, &se) {
		return err
	}
	return c.refuse(streamID, se.Code, se.Description, err)
}

// refuse tells the client why it may not publish, then ends the connection.
// The client is given a moment to read the answer: closing a socket with
// unread input makes the kernel send a reset, which can destroy the reply
// before the client reads it.
func (c *conn) refuse(streamID uint32, code, desc string, cause error) error {
	c.log.Info("rtmp publish refused", "app", c.app, "code", code, "err", cause)
	if err := c.send(c.onStatus(streamID, "error", code, desc)); err != nil {
		return err
	}
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, 1<<20))
	if cause != nil {
		return fmt.Errorf("%w: %w", errRefused, cause)
	}
	return errRefused
}

// data handles data messages; only stream metadata is of interest.
func (c *conn) data(payload []byte) error {
	vals, _ := amf0.DecodeAll(payload)
	if len(vals) > 0 && vals[0] == "@setDataFrame" {
		vals = vals[1:]
	}
	if len(vals) < 2 || vals[0] != "onMetaData" || c.pub == nil {
		return nil
	}
	var meta map[string]any
	switch v := vals[1].(type) {
	case map[string]any:
		meta = v
	case amf0.ECMAArray:
		meta = v
	default:
		return nil
	}
	c.pub.sink.Metadata(meta)
	return nil
}
