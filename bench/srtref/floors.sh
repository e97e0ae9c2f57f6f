#!/usr/bin/env bash
# bench/srtref/floors.sh: OnAir's own SRT transport beside gosrt's, bare.
# Two srtfloor processes (bench/internal/srtfloor) receive the same 30 s
# ffmpeg stream in turn: gosrt's listener with OnAir's demuxer (-demux)
# and OnAir's SRT server, its own listener and the same demuxer (-lean),
# units discarded either way. Their CPU (user + system from /proc) a
# stream, a round per line, the order swapped every other round.
#
#   ROUNDS=3 SECONDS_EACH=30 bash bench/srtref/floors.sh
set -euo pipefail
rounds=${ROUNDS:-3}
secs=${SECONDS_EACH:-30}
cache=${ONAIR_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onair-bench}
in=$cache/testsrc2-720p30-2500k-g60-60s.flv
[ -f "$in" ] || { echo "floors: run bench/live once for its input $in" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
go build -o "$tmp/srtfloor" ./bench/internal/srtfloor
tck=$(getconf CLK_TCK)

# start MODE: a floor process; sets addr and pid.
start() {
  coproc FLOOR { exec "$tmp/srtfloor" -addr 127.0.0.1:0 "$1"; }
  pid=$FLOOR_PID
  read -r addr <&"${FLOOR[0]}"
  pids+=("$pid")
}
cpu() { awk -v t="$tck" '{printf "%.3f", ($14+$15)/t}' "/proc/$1/stat"; }

# receive PID ADDR: publishes the stream to ADDR, prints PID's CPU seconds for it.
receive() {
  local before after
  before=$(cpu "$1")
  ffmpeg -hide_banner -loglevel error -nostdin -re -i "$in" -t "$secs" -c copy -f mpegts "srt://$2?streamid=floor-$RANDOM&pkt_size=1316"
  sleep 1 # the listener's last ticks and the caller's shutdown
  after=$(cpu "$1")
  awk -v a="$after" -v b="$before" 'BEGIN{printf "%.2f", a-b}'
}

start -demux; gp=$pid; ga=$addr
start -lean; lp=$pid; la=$addr
echo "Run of $(date -u '+%Y-%m-%d %H:%M') UTC: $(nproc) cores, $secs s a stream at 2.5 Mb/s"
echo
echo "| round | gosrt listener + demuxer CPU s | OnAir's listener + demuxer CPU s | OnAir's ÷ gosrt's | load before (1/5/15 min) |"
echo "|---:|---:|---:|---:|---|"
for i in $(seq 1 "$rounds"); do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  if [ $((i % 2)) -eq 1 ]; then
    g=$(receive "$gp" "$ga"); l=$(receive "$lp" "$la")
  else
    l=$(receive "$lp" "$la"); g=$(receive "$gp" "$ga")
  fi
  echo "| $i | $g | $l | $(awk -v g="$g" -v l="$l" 'BEGIN{printf "%.2f×", l/g}') | $load |"
done
