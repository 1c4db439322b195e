#!/bin/bash
# screenshot.sh: regenerate docs/img/report.png, the HTML report the README
# shows, from real data in the repository: the two kernel-lab captures of
# scenario 5 (testdata/captures/cgroups-{quiet,stalled}-6.1-x86_64-v2.txtar,
# a systemd-like and a Kubernetes-like hierarchy a minute apart) read as one
# recording by `memdoctor report`, rendered by headless Chromium.
#
# usage: scripts/screenshot.sh [OUT]   (default docs/img/report.png)
# Environment: WIDTH (default 1000), HEIGHT (default 1250) of the window.
# Needs Go and Debian's chromium (scripts/install-test-deps.sh installs it).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/img/report.png}
width=${WIDTH:-1000}
height=${HEIGHT:-1250}

browser=
for b in chromium chromium-browser; do
	if command -v "$b" >/dev/null; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
	echo "screenshot.sh: chromium not found: install it (apt-get install chromium, or scripts/install-test-deps.sh)" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/memdoctor" ./cmd/memdoctor)
mkdir "$work/lab-containers-6.1"
cp "$root"/testdata/captures/cgroups-quiet-6.1-x86_64-v2.txtar \
	"$root"/testdata/captures/cgroups-stalled-6.1-x86_64-v2.txtar "$work/lab-containers-6.1/"
(cd "$work" && ./memdoctor report --from lab-containers-6.1 -o report.html)

# --hide-scrollbars: the picture is the page, not the window's chrome.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--user-data-dir="$work/profile" \
	--window-size="$width,$height" --screenshot="$work/report.png" \
	"file://$work/report.html" >"$work/chromium.log" 2>&1 || {
	cat "$work/chromium.log" >&2
	exit 1
}
mkdir -p "$(dirname "$out")"
cp "$work/report.png" "$out"
echo "$out: $(stat -c %s "$out") bytes"
