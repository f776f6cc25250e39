#!/usr/bin/env bash
# Makes sure Chromium is on this machine for the browser tests: installs Debian's
# package when missing and we may (root with apt-get), else says what to do and fails.
# Playwright is pointed at it; its own browser download is never used.
set -euo pipefail

for candidate in "${CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null; then
    echo "Chromium found at $(command -v "$candidate")"
    exit 0
  fi
done

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing Chromium from Debian's packages..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "The browser tests need Chromium: install it (for example 'apt-get install chromium') or set CHROMIUM to its path." >&2
exit 1
