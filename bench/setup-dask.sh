#!/usr/bin/env bash
# Installs Dask distributed for the comparison in bench/tasks: Debian's
# python3-distributed, for Debian's python (/usr/bin/python3; $DASK_PYTHON overrides it).
# Does nothing when it is importable already; needs root or sudo to install.
set -euo pipefail
PY=${DASK_PYTHON:-/usr/bin/python3}
if "$PY" -c 'import distributed' 2>/dev/null; then
  exit 0
fi
if ! dpkg-query -W -f='${Status}' python3-distributed 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup-dask: installing python3-distributed" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends python3-distributed >&2
fi
if ! "$PY" -c 'import distributed' 2>/dev/null; then
  echo "setup-dask: python3-distributed is installed but '$PY' cannot import distributed" >&2
  exit 1
fi
