#!/usr/bin/env bash
# Makes sure a Java that PySpark 4 supports (17 or 21) is on this machine: installs
# Debian's OpenJDK 17 when none is found and we may (root with apt-get), else says what
# to do and fails.
set -euo pipefail

java_major() {
  local java="$1"
  "$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\(\.\([0-9]*\)\)\?.*/\1 \3/p' | head -n1 |
    awk '{ if ($1 == 1) print $2; else print $1 }'
}

java_bin="${JAVA_HOME:+$JAVA_HOME/bin/java}"
java_bin="${java_bin:-$(command -v java || true)}"
if [ -n "$java_bin" ] && [ -x "$java_bin" ]; then
  major="$(java_major "$java_bin")"
  if [ -n "$major" ] && [ "$major" -ge 17 ]; then
    echo "Java $major found at $java_bin"
    exit 0
  fi
  echo "Found Java ${major:-of unknown version} at $java_bin; Spark 4 needs Java 17 or 21."
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing OpenJDK 17 from Debian's packages..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  exit 0
fi
echo "Spark needs Java 17 or 21: install one (for example 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME." >&2
exit 1
