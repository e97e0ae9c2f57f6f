#!/bin/sh
# Replaces the vendored Redoc, which renders /v1/openapi.json at /docs, with
# a release from the npm registry.
#
#   modules/pages/static/update-redoc.sh           # the release below
#   modules/pages/static/update-redoc.sh 3.0.2     # a given version
#
# It copies bundles/redoc.standalone.js (Redoc with React and its styles in
# one ES module, no CDN) and the package's LICENSE next to this script, and
# records the version and checksum in redoc.VERSION. The files are committed
# and embedded in the binary (static.go), so `go run .` needs no build step.
# docs.js turns Redoc's telemetry off; the one thing the bundle would still
# fetch from elsewhere, Redocly's logo beside its "powered by" link, is
# pointed at an empty data: URL here, and Redoc leaves an image that does
# not load out. The script fails if that logo's URL is no longer there. Needs npm and node; run the page
# tests afterwards (go test -run Docs ./modules/pages/).
set -eu
version=${1:-3.0.1}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "redoc@$version" >/dev/null
tar xzf redoc-*.tgz
grep -q 'https://cdn.redoc.ly/redoc/logo-mini' package/bundles/redoc.standalone.js
sed 's#https://cdn\.redoc\.ly/redoc/logo-mini[a-z-]*\.svg#data:,#g' package/bundles/redoc.standalone.js >"$here/redoc.standalone.js"
if grep -o 'https://cdn\.redoc\.ly[^`"]*' "$here/redoc.standalone.js"; then
	echo "redoc $version still fetches from cdn.redoc.ly: look at the lines above" >&2
	exit 1
fi
cp package/LICENSE "$here/redoc.LICENSE"
got=$(node -p "require('./package/package.json').version")
sum=$(sha256sum "$here/redoc.standalone.js" | cut -d' ' -f1)
printf 'redoc %s from the npm registry: bundles/redoc.standalone.js, the cdn.redoc.ly logo URLs made data:,\nsha256 %s\n' "$got" "$sum" >"$here/redoc.VERSION"
echo "redoc $got vendored in $here"
