#!/usr/bin/env bash
# bench/srtref: what SRT costs in its reference implementation. ffmpeg
# receives the same 30 s stream over SRT (libsrt, as a listener) and over
# RTMP (-listen 1), remuxing it to MPEG-TS into /dev/null either way; the
# receivers' CPU (user + system, /usr/bin/time) side by side, a round per
# line, the order swapped every other round. It is the peer of bench/live's
# SRT rows: OnAir's SRT ingest is measured there against its RTMP ingest
# and against a bare gosrt listener (docs/benchmarks.md).
#
#   ROUNDS=3 SECONDS_EACH=30 bash bench/run.sh srtref
#
# Input: bench/live's pre-encoded 720p30 H.264 + AAC FLV (made here with
# the same command when missing). Needs ffmpeg built with libsrt (Debian's
# is) and /usr/bin/time.
set -euo pipefail
rounds=${ROUNDS:-3}
secs=${SECONDS_EACH:-30}
cache=${ONAIR_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onair-bench}
in=$cache/testsrc2-720p30-2500k-g60-60s.flv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ffmpeg -hide_banner -protocols 2>/dev/null | grep -qx ' *srt' || { echo "srtref: this ffmpeg has no libsrt" >&2; exit 1; }
if [ ! -f "$in" ]; then
  mkdir -p "$cache"
  ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i 'testsrc2=size=1280x720:rate=30' -f lavfi -i 'sine=frequency=440:sample_rate=48000' -t 60 \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -b:v 2400k -maxrate 2400k -bufsize 4800k -g 60 -keyint_min 60 -sc_threshold 0 \
    -c:a aac -b:a 128k -ac 2 -f flv "$in"
fi

freeport() { python3 -c 'import socket,sys;s=socket.socket(socket.AF_INET,getattr(socket,sys.argv[1]));s.bind(("127.0.0.1",0));print(s.getsockname()[1])' "$1"; }

# receive PROTO: one receiver and one sender; prints the receiver's CPU seconds.
receive() {
  local p url out send
  case $1 in
  srt)
    p=$(freeport SOCK_DGRAM)
    url="srt://127.0.0.1:$p?mode=listener"
    send=(-f mpegts "srt://127.0.0.1:$p?pkt_size=1316")
    ;;
  rtmp)
    p=$(freeport SOCK_STREAM)
    url="rtmp://127.0.0.1:$p/live/key"
    send=(-f flv "rtmp://127.0.0.1:$p/live/key")
    ;;
  esac
  local listen=()
  [ "$1" = rtmp ] && listen=(-listen 1)
  /usr/bin/time -f '%U %S' -o "$tmp/$1.time" ffmpeg -hide_banner -loglevel fatal -nostdin -y "${listen[@]}" -i "$url" -c copy -f mpegts /dev/null &
  local r=$!
  # Wait for the listener's socket, not a fixed time.
  local flag=-tln
  [ "$1" = srt ] && flag=-uln
  until ss "$flag" | grep -q "127.0.0.1:$p "; do
    kill -0 "$r" 2>/dev/null || { echo "srtref: the $1 receiver exited" >&2; exit 1; }
    sleep 0.05
  done
  ffmpeg -hide_banner -loglevel error -nostdin -re -i "$in" -t "$secs" -c copy "${send[@]}"
  wait "$r" || true # ffmpeg ends a listener's input at the peer's close with an I/O error
  awk '{printf "%.2f", $1+$2}' "$tmp/$1.time"
}

echo "Run of $(date -u '+%Y-%m-%d %H:%M') UTC: $(nproc) cores, $(ffmpeg -hide_banner -version | head -1 | cut -d' ' -f1-3), $secs s a stream"
echo
echo "| round | ffmpeg over SRT (libsrt) CPU s | ffmpeg over RTMP CPU s | SRT ÷ RTMP | load before (1/5/15 min) |"
echo "|---:|---:|---:|---:|---|"
for i in $(seq 1 "$rounds"); do
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  if [ $((i % 2)) -eq 1 ]; then
    s=$(receive srt)
    r=$(receive rtmp)
  else
    r=$(receive rtmp)
    s=$(receive srt)
  fi
  echo "| $i | $s | $r | $(awk -v s="$s" -v r="$r" 'BEGIN{printf "%.2f×", s/r}') | $load |"
done
