#!/usr/bin/env bash
# Runs the chat fan-out benchmark with enough file descriptors for 10,000
# sockets on each side (server and clients are separate processes; each
# inherits this limit). Arguments go to the program: bash bench/chat/run.sh
# -viewers 1000 -seconds 10
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec go run ./bench/chat "$@"
