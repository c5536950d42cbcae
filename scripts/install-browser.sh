#!/usr/bin/env bash
# Installs Debian's Chromium for the dashboard's browser test, if it is missing. Idempotent.
# Playwright's own browser download cannot work here (no internet but the package registries), so
# the test drives /usr/bin/chromium through playwright-core.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-browser: chromium is missing and this is not root; run: sudo apt-get install chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Another apt-get (scripts/services.sh) may hold the lock: wait for it, bounded.
for _ in $(seq 1 60); do
  if ! fuser /var/lib/dpkg/lock-frontend >/dev/null 2>&1; then break; fi
  sleep 2
done
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium
