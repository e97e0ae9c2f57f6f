#!/usr/bin/env bash
# Runs the benchmarks under bench/. Each bench/NAME/ directory is one
# benchmark: its own run.sh when it has one (for set-up such as starting a
# server or seeding a database), otherwise its main package with `go run`.
# bench/internal/ holds code the benchmarks share and bench/results/ their
# dated results; neither is one.
# Arguments name the benchmarks to run (default: all of them). Results go
# to stdout and, for those that generate them, dated files under
# bench/results/; docs/benchmarks.md has the current figures. bench/soak
# runs 30 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in bench/*/; do
    case "$(basename "$d")" in internal | results) ;; *) names+=("$(basename "$d")") ;; esac
  done
fi

ran=0
for name in "${names[@]}"; do
  dir="bench/$name"
  if [ -f "$dir/run.sh" ]; then
    echo "== bench/$name (run.sh)"
    bash "$dir/run.sh"
  elif grep -qs '^package main' "$dir"/*.go; then
    echo "== bench/$name (go run)"
    go run "./$dir"
  else
    echo "bench/$name: no run.sh and no main package; skipped" >&2
    continue
  fi
  ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "no benchmarks found under bench/" >&2; exit 1; }
