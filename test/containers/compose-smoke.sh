#!/usr/bin/env bash
# npm run test:compose: deploy/docker/compose.yaml, unchanged, run with podman-compose on the
# project image and the PostgreSQL and NATS images of deploy/images/build-local.sh; the checks
# are in compose.smoke.test.ts. The stack is a project of its own (oi-smoke-<pid>) on a free host
# port: the host's PostgreSQL, NATS and port 3000 are left alone, and everything it creates
# (containers, network, volumes) is removed at the end, whatever happened.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/images/local-env.sh
oi_require podman podman
oi_require podman-compose podman-compose
deploy/images/build-local.sh

export OI_COMPOSE_PROJECT=oi-smoke-$$
export POSTGRES_IMAGE=${POSTGRES_IMAGE:-$OI_POSTGRES_IMAGE} NATS_IMAGE=${NATS_IMAGE:-$OI_NATS_IMAGE}
export GATEWAY_HOST_PORT
GATEWAY_HOST_PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
export ADMIN_API_KEY SECRETS_ENCRYPTION_KEYS
ADMIN_API_KEY=smoke-$(node -p 'require("crypto").randomBytes(16).toString("hex")')
SECRETS_ENCRYPTION_KEYS=smoke:$(node -p 'require("crypto").randomBytes(32).toString("base64")')
# The receiver is a plain-http private address: allowed for this stack only.
export WEBHOOK_ALLOW_INSECURE_TARGETS=true

cleanup() {
  local ids
  ids=$(podman ps -aq --no-trunc --filter "label=io.podman.compose.project=$OI_COMPOSE_PROJECT" 2>/dev/null || true)
  podman-compose -p "$OI_COMPOSE_PROJECT" -f deploy/docker/compose.yaml down -v >/dev/null 2>&1 || true
  # A container restarted by its policy while compose went down, and what it leaves.
  podman ps -aq --filter "label=io.podman.compose.project=$OI_COMPOSE_PROJECT" | xargs -r podman rm -f >/dev/null 2>&1 || true
  podman volume ls -q --filter "label=io.podman.compose.project=$OI_COMPOSE_PROJECT" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
  podman network rm -f "${OI_COMPOSE_PROJECT}_default" >/dev/null 2>&1 || true
  # podman 4.3 leaves the conmon of each healthcheck exec session running after its container is gone.
  for id in $ids; do pkill -f "conmon --api-version 1 -c $id" 2>/dev/null || true; done
}
trap cleanup EXIT

echo "test:compose: project $OI_COMPOSE_PROJECT, gateway on 127.0.0.1:$GATEWAY_HOST_PORT, images $OI_APP_IMAGE, $POSTGRES_IMAGE, $NATS_IMAGE"
started=$SECONDS
npm run -s jest -- \
  --config '{"rootDir":".","testMatch":["<rootDir>/test/containers/**/*.test.ts"],"transform":{"^.+\\.ts$":["@swc/jest"]},"testEnvironment":"node","modulePathIgnorePatterns":["<rootDir>/dist/"]}' \
  test/containers/compose.smoke.test.ts
echo "test:compose: passed in $((SECONDS - started)) s; image $OI_APP_IMAGE $(( $(podman image inspect --format '{{.Size}}' "$OI_APP_IMAGE") / 1000000 )) MB"
