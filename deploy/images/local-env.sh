# Sourced by the scripts that drive podman here (build-local.sh, test/containers/*.sh): the local
# image names and the two podman settings these machines need (docs/operations.md, "Containers
# without a registry"). Set OI_IMAGES_WORK to keep the big artefacts elsewhere.
OI_IMAGES_WORK=${OI_IMAGES_WORK:-/var/tmp/oi-images}
OI_IMAGES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OI_REPO_ROOT=$(cd "$OI_IMAGES_DIR/../.." && pwd)

OI_NODE_VERSION=$(node -p 'require(process.argv[1]).devDependencies.node' "$OI_REPO_ROOT/package.json")
OI_APP_VERSION=$(node -p 'require(process.argv[1]).version' "$OI_REPO_ROOT/package.json")
export OI_DEBIAN_IMAGE=localhost/oi-debian:bookworm
export OI_NODE_IMAGE=localhost/oi-node:$OI_NODE_VERSION
export OI_POSTGRES_IMAGE=localhost/oi-postgres:15
export OI_NATS_IMAGE=localhost/oi-nats:2
# The name compose.yaml gives the project image; podman resolves it to localhost/ first.
export OI_APP_IMAGE=localhost/order-intake:$OI_APP_VERSION

mkdir -p "$OI_IMAGES_WORK"
# Default ulimits cannot be applied in these VMs and there is no systemd to manage cgroups;
# podman ran here with runc (STACK-NOTES); events go to a file, as there is no journald.
if [ -z "${CONTAINERS_CONF:-}" ]; then
  export CONTAINERS_CONF="$OI_IMAGES_WORK/containers.conf"
  printf '%s\n' '[containers]' 'default_ulimits = []' '[engine]' 'cgroup_manager = "cgroupfs"' \
    'runtime = "runc"' 'events_logger = "file"' > "$CONTAINERS_CONF"
fi

oi_require() { # command, Debian package: one line naming what is missing
  command -v "$1" >/dev/null 2>&1 || { echo "FATAL: $1 is missing (apt-get install $2)" >&2; exit 1; }
}

oi_image_label() { # image, label: the label's value, empty when the image is absent
  podman image inspect --format "{{index .Labels \"$2\"}}" "$1" 2>/dev/null || true
}

oi_hash_files() { # paths...: one hash of the names and contents of every file under them
  (cd "$OI_REPO_ROOT" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}
