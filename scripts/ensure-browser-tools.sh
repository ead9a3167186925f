#!/usr/bin/env bash
# Make sure the programs the browser tests drive are present: Debian's Chromium (Playwright
# drives /usr/bin/chromium; its own browser download does not work offline) and nginx (the
# sticky-proxy test runs two app processes behind the docs/scale.md configuration).
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Debian ${missing[*]} for the browser tests..." >&2
  export DEBIAN_FRONTEND=noninteractive
  # The tests start their own nginx on a free port: keep the package's service from
  # starting on port 80 during the install (exit 101 = "not allowed" to invoke-rc.d).
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  trap 'if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
  # A failed install (no network, a held package) must not stop the test run: the tests
  # that need the program then skip, or fail under CI=true, and say which program is missing.
  if ! { apt-get update -qq >/dev/null && \
         apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "warning: could not install ${missing[*]} with apt-get;" \
         "the browser tests that need them will be skipped" >&2
  fi
else
  echo "warning: ${missing[*]} missing and cannot be installed here (need root + apt);" \
       "the browser tests that need them will be skipped" >&2
fi
