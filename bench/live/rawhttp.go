package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// rawConn is a bench client's keep-alive HTTP/1.1 connection, read and
// written by its one goroutine: a GET is one write, its answer read
// through a 64 KB buffer. net/http's client costs a reader and a writer
// goroutine per connection and three goroutine wakes per request (the
// caller's, the writer's, the reader's), each read through a 4 KB buffer:
// on the 2 cores a crowd shares with the server that was ~55 ms of the
// clients' CPU per part, a player's work that players do on machines of
// their own (bench/results/2026-11-28g-wake.md). The request carries what
// Go's client sent (User-Agent, Accept-Encoding), so the server does the
// same work for it.
type rawConn struct {
	addr, host string
	timeout    time.Duration
	c          net.Conn
	r          *bufio.Reader
	req        []byte
	body       []byte
}

var errChunked = errors.New("chunked answer (not expected)")

// get asks for path (with its query) and reads the answer: its body when
// keep (valid until the next get), else discarded; published is its
// X-Onair-Published (zero without), arrived the moment its header was read
// (as net/http's Get returns), read the moment its body was.
func (k *rawConn) get(path string, keep bool) (body []byte, published, arrived, read time.Time, err error) {
	if k.c == nil {
		if k.c, err = net.DialTimeout("tcp", k.addr, k.timeout); err != nil {
			k.c = nil
			return nil, published, time.Now(), time.Now(), err
		}
		k.r = bufio.NewReaderSize(k.c, 64<<10)
	}
	defer func() {
		if err != nil {
			k.c.Close()
			k.c = nil
		}
	}()
	k.c.SetDeadline(time.Now().Add(k.timeout))
	k.req = append(k.req[:0], "GET "...)
	k.req = append(k.req, path...)
	k.req = append(k.req, " HTTP/1.1\r\nHost: "...)
	k.req = append(k.req, k.host...)
	k.req = append(k.req, "\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n"...)
	if _, err = k.c.Write(k.req); err != nil {
		return nil, published, time.Now(), time.Now(), err
	}
	line, err := k.r.ReadSlice('\n')
	if err != nil {
		return nil, published, time.Now(), time.Now(), err
	}
	status := 0
	if len(line) >= 12 && bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		status, _ = strconv.Atoi(string(line[9:12]))
	}
	length, closing := -1, false
	for {
		line, err = k.r.ReadSlice('\n')
		if err != nil {
			return nil, published, time.Now(), time.Now(), err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length, err = strconv.Atoi(string(value))
		case bytes.EqualFold(name, []byte("X-Onair-Published")):
			var us int64
			if us, err = strconv.ParseInt(string(value), 10, 64); err == nil {
				published = time.UnixMicro(us)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			err = errChunked
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
		if err != nil {
			return nil, published, time.Now(), time.Now(), fmt.Errorf("%s: %w", name, err)
		}
	}
	arrived = time.Now()
	if length < 0 {
		return nil, published, arrived, arrived, errors.New("answer without Content-Length")
	}
	if keep {
		if cap(k.body) < length {
			k.body = make([]byte, length)
		}
		body = k.body[:length]
		_, err = io.ReadFull(k.r, body)
	} else {
		_, err = k.r.Discard(length)
	}
	read = time.Now()
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d", status)
	}
	if err == nil && closing {
		k.c.Close()
		k.c = nil
	}
	return body, published, arrived, read, err
}
