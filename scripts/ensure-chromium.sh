#!/usr/bin/env bash
# Make sure Debian's Chromium is present for the headless browser tests
# (Playwright drives /usr/bin/chromium; its own browser download does not work offline).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Debian chromium for the browser tests..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
else
  echo "warning: /usr/bin/chromium is missing and cannot be installed here (need root + apt);" \
       "browser tests will be skipped" >&2
fi
