#!/usr/bin/env bash
# Draw `dvc plots show`'s page in headless Chromium, with the network off, and save a PNG:
# the way to see that the curves render offline and that their axes are named.
#   tools/screenshot_plots.sh [out.png]      (default: dvc_plots/screenshot.png)
# Needs chromium (apt-get install chromium fonts-noto-cjk) and dvc on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dvc_plots/screenshot.png}"
mkdir -p "$(dirname "$out")"
page="$(mktemp -d)"
trap 'rm -rf "$page"' EXIT
dvc plots show -o "$page" >/dev/null
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome)"
# A proxy that does not exist: any request the page makes for the network fails, as offline.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
  --virtual-time-budget=5000 --window-size=1200,2400 \
  --screenshot="$(realpath -m "$out")" "file://$page/index.html" 2>/dev/null
echo "$out"
