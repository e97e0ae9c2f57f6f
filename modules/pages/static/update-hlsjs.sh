#!/bin/sh
# Replaces the vendored hls.js with a release from the npm registry.
#
#   modules/pages/static/update-hlsjs.sh           # the latest release
#   modules/pages/static/update-hlsjs.sh 1.7.4     # a given version
#
# It copies dist/hls.light.min.js (hls.js without subtitles, alternate audio
# and DRM, which OnAir's playlists never use) and the package's LICENSE next
# to this script, and records the version and checksum in hls.js.VERSION.
# The files are committed and embedded in the binary (static.go), so
# `go run .` needs no build step. Needs npm and node; run the page tests
# afterwards (go test ./modules/pages/).
set -eu
version=${1:-latest}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "hls.js@$version" >/dev/null
tar xzf hls.js-*.tgz
cp package/dist/hls.light.min.js "$here/hls.light.min.js"
cp package/LICENSE "$here/hls.js.LICENSE"
got=$(node -p "require('./package/package.json').version")
sum=$(sha256sum "$here/hls.light.min.js" | cut -d' ' -f1)
printf 'hls.js %s from the npm registry: dist/hls.light.min.js\nsha256 %s\n' "$got" "$sum" >"$here/hls.js.VERSION"
echo "hls.js $got vendored in $here"
