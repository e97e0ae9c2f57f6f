// Command srtfloor is the floor of SRT ingest for bench/live -srt: a bare
// github.com/datarhei/gosrt listener, configured as OnAir's SRT server
// configures it, that accepts every caller and reads its stream into a
// discarded buffer (-demux: through the MPEG-TS demuxer OnAir uses, its
// units discarded). Its CPU time, in a process of its own, is what the
// library costs for the stream before OnAir does anything with it. -lean
// serves with OnAir's own SRT transport instead (modules/live/srt's
// Server, which demuxes; units discarded): the same floor for it.
//
//	srtfloor -addr 127.0.0.1:9000 [-demux | -lean]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	gosrt "github.com/datarhei/gosrt"

	"github.com/onair/onair/modules/live/srt"
	"github.com/onair/onair/modules/live/streamcore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "UDP address to listen on")
	demux := flag.Bool("demux", false, "demux the MPEG-TS as OnAir does (units discarded) instead of discarding the bytes")
	peerIPChange := flag.Bool("allow-peer-ip-change", false, "gosrt's AllowPeerIpChange (skips its per-packet check of the sender's address)")
	lean := flag.Bool("lean", false, "serve with OnAir's SRT server (its own listener and the demuxer), units discarded")
	flag.Parse()
	if *lean {
		serveLean(*addr)
		return
	}
	cfg := srt.Config(0, "")
	cfg.AllowPeerIpChange = *peerIPChange
	ln, err := gosrt.Listen("srt", *addr, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "srtfloor:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String()) // the caller waits for this line
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		ln.Close()
	}()
	for {
		req, err := ln.Accept2()
		if err != nil {
			if !errors.Is(err, gosrt.ErrListenerClosed) {
				fmt.Fprintln(os.Stderr, "srtfloor:", err)
			}
			return
		}
		conn, err := req.Accept()
		if err != nil {
			continue
		}
		go read(conn, *demux)
	}
}

func read(conn gosrt.Conn, demux bool) {
	defer conn.Close()
	if !demux {
		_, _ = io.Copy(io.Discard, conn)
		return
	}
	d, err := srt.NewDemuxer(conn, func(streamcore.Unit) error { return nil }, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "srtfloor: demux:", err)
		return
	}
	for d.Read() == nil {
	}
}

// serveLean accepts every caller with OnAir's SRT server and discards
// the units.
func serveLean(addr string) {
	s := &srt.Server{Handler: srt.HandlerFunc(func(context.Context, srt.PublishRequest) (srt.Sink, error) {
		return discard{}, nil
	})}
	if err := s.Listen(addr); err != nil {
		fmt.Fprintln(os.Stderr, "srtfloor:", err)
		os.Exit(1)
	}
	fmt.Println(s.Addr().String())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		s.Close()
	}()
	_ = s.Serve()
}

type discard struct{}

func (discard) Tracks(bool, bool) error     { return nil }
func (discard) Write(streamcore.Unit) error { return nil }
func (discard) Close(error)                 {}
