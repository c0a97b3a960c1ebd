#!/bin/sh
# Builds CAIRN_STORE from CAIRN_PG_* and the password secret (never on a command line, which
# other users can read), creates the service's folder on the first start only (a folder whose
# policies were removed on purpose is never re-created with allow-all ones), then runs `cairn`
# with the container's command.
set -eu
umask 077
if [ -n "${CAIRN_PG_HOST:-}" ]; then
  password=$(cat /run/secrets/postgres-password)
  export CAIRN_STORE="postgres://${CAIRN_PG_USER}:${password}@${CAIRN_PG_HOST}/${CAIRN_PG_DATABASE}"
fi
if [ ! -e /var/lib/cairn/keys ]; then
  cairn serve --init-only --data /var/lib/cairn
fi
exec cairn "$@"
