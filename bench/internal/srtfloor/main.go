// Command srtfloor is the floor of SRT ingest for bench/live -srt: a bare
// github.com/datarhei/gosrt listener, configured as OnAir's SRT server
// configures it, that accepts every caller and reads its stream into a
// discarded buffer (-demux: through the MPEG-TS demuxer OnAir uses, its
// units discarded). Its CPU time, in a process of its own, is what the
// library costs for the stream before OnAir does anything with it.
//
//	srtfloor -addr 127.0.0.1:9000 [-demux]
package main

import (
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
	flag.Parse()
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
