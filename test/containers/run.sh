#!/usr/bin/env bash
# npm run test:containers [-- <test files>]: the integration tests against PostgreSQL and NATS
# started in containers by testcontainers (test/containers/servers.ts), not the shared servers.
# - Docker (DOCKER_HOST, or /var/run/docker.sock): the public images postgres:16 and nats:2.
# - podman (these machines): its Docker-compatible API on a socket of our own, and the images
#   deploy/images/build-local.sh makes from Debian packages (no registry is needed).
# TEST_POSTGRES_IMAGE / TEST_NATS_IMAGE choose other images. Without a file list it runs
# CONTAINER_SUITE below; OI_CONTAINERS_SUITE=all runs the whole integration tier.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The paths through both servers: orders and their outbox over NATS (JetStream), the webhook
# deliveries they cause, the migrations both ways, and a cluster of processes over NATS. The
# whole tier takes 9 minutes here (39 files): this subset keeps CI under its 20 minutes.
CONTAINER_SUITE=(
  test/integration/orders.test.ts
  test/integration/outbox-relay.test.ts
  test/integration/webhooks.orders.test.ts
  test/integration/migrations.test.ts
  test/integration/start-cluster.test.ts
)

export OI_TEST_RUN=${OI_TEST_RUN:-ctr$(date +%s)}
started_service=""
cleanup() {
  if [ -n "${OI_PODMAN:-}" ]; then
    podman ps -aq --filter "label=oi.test-containers=$OI_TEST_RUN" | xargs -r podman rm -f >/dev/null 2>&1 || true
  fi
  if [ -n "$started_service" ]; then kill "$started_service" 2>/dev/null || true; fi
}
trap cleanup EXIT

if [ -n "${DOCKER_HOST:-}" ] || [ -S /var/run/docker.sock ]; then
  echo "test:containers: Docker at ${DOCKER_HOST:-/var/run/docker.sock}, images ${TEST_POSTGRES_IMAGE:-postgres:16} and ${TEST_NATS_IMAGE:-nats:2}"
elif command -v podman >/dev/null 2>&1; then
  OI_PODMAN=1
  source deploy/images/local-env.sh
  deploy/images/build-local.sh servers
  socket=$OI_IMAGES_WORK/podman.sock
  if ! podman --url "unix://$socket" version >/dev/null 2>&1; then
    podman system service --time=0 "unix://$socket" >"$OI_IMAGES_WORK/podman-service.log" 2>&1 &
    started_service=$!
    for _ in $(seq 50); do podman --url "unix://$socket" version >/dev/null 2>&1 && break; sleep 0.2; done
  fi
  export DOCKER_HOST=unix://$socket
  # podman has no Ryuk: run.sh removes the containers. Ports are reached on the host, not the bridge.
  export TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
  export TEST_POSTGRES_IMAGE=${TEST_POSTGRES_IMAGE:-$OI_POSTGRES_IMAGE} TEST_NATS_IMAGE=${TEST_NATS_IMAGE:-$OI_NATS_IMAGE}
  echo "test:containers: podman at $DOCKER_HOST, images $TEST_POSTGRES_IMAGE and $TEST_NATS_IMAGE"
else
  echo "FATAL: test:containers needs a container runtime: Docker, or podman (apt-get install podman runc)" >&2
  exit 1
fi

files=("$@")
if [ ${#files[@]} -eq 0 ] && [ "${OI_CONTAINERS_SUITE:-}" != all ]; then files=("${CONTAINER_SUITE[@]}"); fi
npm run -s build
unset TEST_DATABASE_URL TEST_NATS_URL
# The files before --selectProjects, which would take them for project names.
OI_TEST_CONTAINERS=1 npm run -s jest -- \
  "${files[@]}" --selectProjects integration
