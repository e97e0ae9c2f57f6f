#!/usr/bin/env bash
# Runs the chat fan-out benchmark with enough file descriptors for its
# crowds on each side (server and clients are separate processes; each
# inherits this limit): it raises the hard limit, which needs root with
# CAP_SYS_RESOURCE. Where that is refused it says so and runs under the
# limit there is (the benchmark then sets the server's ONAIR_MAX_CONNS
# for crowds the derived cap cannot hold). Arguments go to the program:
# bash bench/chat/run.sh -viewers 1000 -seconds 10
set -euo pipefail
cd "$(dirname "$0")/../.."
want=65536
if ! ulimit -n "$want" 2>/dev/null; then
	echo "chat: cannot raise the descriptor limit to $want (needs CAP_SYS_RESOURCE); running under $(ulimit -Hn)" >&2
	ulimit -n "$(ulimit -Hn)"
fi
exec go run ./bench/chat "$@"
