#!/bin/sh
# Create deploy/.env from deploy/.env.example with a new random API key (RAGLOOP_API_KEYS) and
# Grafana admin password (GRAFANA_ADMIN_PASSWORD); an existing deploy/.env is kept as it is.
# `make up` runs it before `docker compose up`.
set -eu
cd "$(dirname "$0")"
if [ -f .env ]; then
    echo "deploy/.env exists: kept"
    exit 0
fi
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
umask 077  # the file holds secrets
sed -e "s/^RAGLOOP_API_KEYS=\$/RAGLOOP_API_KEYS=$(random_hex 24)/" \
    -e "s/^GRAFANA_ADMIN_PASSWORD=\$/GRAFANA_ADMIN_PASSWORD=$(random_hex 16)/" \
    .env.example > .env
echo "created deploy/.env with a new API key (RAGLOOP_API_KEYS) and Grafana admin password"
