#!/bin/sh
# Create deploy/.env from deploy/.env.example with new random secrets: the API key
# (RAGLOOP_API_KEYS), Grafana's admin password (GRAFANA_ADMIN_PASSWORD) and MinIO's root user and
# password (MINIO_ROOT_USER, MINIO_ROOT_PASSWORD). An existing deploy/.env keeps every value it
# has: only those of these secrets that are empty there are filled (MinIO's volume keeps the
# credentials it started with). `make up` runs it before `docker compose up`.
set -eu
cd "$(dirname "$0")"
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
# fill NAME BYTES: the line `NAME=` (empty) gets a random value of BYTES bytes, in hex
fill() { sed "s/^$1=\$/$1=$(random_hex "$2")/"; }
umask 077  # the file holds secrets
if [ -f .env ]; then source=.env; else source=.env.example; fi
fill RAGLOOP_API_KEYS 24 <"$source" | fill GRAFANA_ADMIN_PASSWORD 16 |
    fill MINIO_ROOT_USER 8 | fill MINIO_ROOT_PASSWORD 24 >.env.new
if [ "$source" = .env ] && cmp -s .env .env.new; then
    rm .env.new
    echo "deploy/.env exists with every secret set: kept"
    exit 0
fi
mv .env.new .env
echo "deploy/.env: new random RAGLOOP_API_KEYS, GRAFANA_ADMIN_PASSWORD and MinIO credentials where empty"
