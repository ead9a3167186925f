#!/usr/bin/env bash
# Make sure the programs the tests drive are present: Debian's Chromium (Playwright drives
# /usr/bin/chromium; its own browser download does not work offline), nginx (the sticky-proxy
# test runs two app processes behind the docs/scale.md configuration) and PostgreSQL (the
# tests start a throw-away server of their own, tests/support/pg_server.py: initdb + pg_ctl
# in a temporary folder, Unix socket only).
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

clusters() {  # "version/name" of each PostgreSQL cluster the Debian tools know, if any
  if command -v pg_lsclusters >/dev/null; then pg_lsclusters -h | awk '{print $1 "/" $2}'; fi
}

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Debian ${missing[*]} for the tests..." >&2
  export DEBIAN_FRONTEND=noninteractive
  # The tests start their own nginx and PostgreSQL: keep the packages' services from
  # starting (nginx on port 80, PostgreSQL on 5432) during the install (exit 101 = "not
  # allowed" to invoke-rc.d).
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  trap 'if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
  before=$(clusters)
  # A failed install (no network, a held package) must not stop the test run: the tests
  # that need the program then skip, or fail under CI=true, and say which program is missing.
  if ! { apt-get update -qq >/dev/null && \
         apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "warning: could not install ${missing[*]} with apt-get;" \
         "the tests that need them will be skipped" >&2
  fi
  # postgresql-common creates (and would start) a "main" cluster on install: drop the ones
  # this install made, so nothing is left on disk or listening on port 5432.
  for cluster in $(clusters); do
    if ! grep -qxF "$cluster" <<<"$before"; then
      pg_dropcluster --stop "${cluster%%/*}" "${cluster#*/}" || \
        echo "warning: could not drop the PostgreSQL cluster $cluster the install made" >&2
    fi
  done
else
  echo "warning: ${missing[*]} missing and cannot be installed here (need root + apt);" \
       "the tests that need them will be skipped" >&2
fi
