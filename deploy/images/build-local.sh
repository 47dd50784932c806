#!/usr/bin/env bash
# Makes, from Debian's packages and the npm registry only (no image registry is needed), the
# images the containers test tier and the compose smoke test run:
#   localhost/oi-debian:bookworm    debootstrap --variant=minbase, slimmed like Debian's -slim images
#   localhost/oi-node:<version>     that base + the `node` devDependency's binary + npm
#   localhost/oi-postgres:15        Debian's PostgreSQL (trust authentication: tests only)
#   localhost/oi-nats:2             Debian's nats-server with JetStream
#   localhost/order-intake:<version> deploy/docker/Dockerfile with NODE_IMAGE=localhost/oi-node
# Every image carries the hash of what it was made from (label oi.inputs); an image whose hash
# still matches is kept, so a second run takes seconds. Prints the project image's size.
# Usage: build-local.sh [all|servers|app]
# Needs root, podman, runc and debootstrap (apt-get install podman runc debootstrap), and `npm ci`
# done (the node binary is taken from node_modules/node). Artefacts go to $OI_IMAGES_WORK.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/local-env.sh"
for tool in podman:podman runc:runc debootstrap:debootstrap; do oi_require "${tool%%:*}" "${tool#*:}"; done
[ "$(id -u)" = 0 ] || { echo "FATAL: build-local.sh needs root (debootstrap, rootful podman)" >&2; exit 1; }

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
NPM_VERSION=${NPM_VERSION:-10.9.9}   # the npm line Node 22 ships with
# The host's trusted authorities go into the node base (see node/Containerfile).
CA_BUNDLE=${OI_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$CA_BUNDLE" ] || { echo "FATAL: $CA_BUNDLE is missing (apt-get install ca-certificates, or set OI_CA_BUNDLE)" >&2; exit 1; }
NPM_CACHE=${NPM_CACHE:-$(npm config get cache)}
BUILD=(podman build --isolation chroot --network host --format docker --layers)

fresh() { # image, hash: true when the image exists and was made from these inputs
  [ "$(oi_image_label "$1" oi.inputs)" = "$2" ]
}

say() { echo "build-local: $*"; }

debian_base() {
  local hash; hash=$(echo "bookworm minbase $DEBIAN_MIRROR $(oi_hash_files deploy/images/debian)" | sha256sum | cut -c1-16)
  if fresh "$OI_DEBIAN_IMAGE" "$hash"; then say "$OI_DEBIAN_IMAGE is up to date"; return; fi
  local rootfs=$OI_IMAGES_WORK/rootfs-bookworm
  rm -rf "$rootfs"
  say "debootstrap bookworm (minbase) from $DEBIAN_MIRROR"
  debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$OI_IMAGES_WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$OI_IMAGES_WORK/debootstrap.log" >&2; exit 1; }
  cp -r "$OI_IMAGES_DIR/debian/etc/." "$rootfs/etc/"
  # What the dpkg and apt settings just copied keep out of later installs, removed from this one.
  find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright -delete 2>/dev/null || true
  rm -rf "$rootfs"/usr/share/{man,info,groff,lintian,locale}/* "$rootfs"/usr/lib/x86_64-linux-gnu/gconv/* "$rootfs"/var/cache/apt/* \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
  tar --numeric-owner -C "$rootfs" -c . \
    | podman import --change "LABEL oi.inputs=$hash" --change 'CMD ["/bin/bash"]' - "$OI_DEBIAN_IMAGE" >/dev/null 2>&1
  rm -rf "$rootfs"
}

node_base() {
  local node_bin=$OI_REPO_ROOT/node_modules/node/bin/node
  [ -x "$node_bin" ] || { echo "FATAL: $node_bin is missing: run npm ci first" >&2; exit 1; }
  [ "$("$node_bin" --version)" = "v$OI_NODE_VERSION" ] \
    || { echo "FATAL: node_modules/node is $("$node_bin" --version), package.json wants $OI_NODE_VERSION: run npm ci" >&2; exit 1; }
  local hash; hash=$(echo "$OI_NODE_VERSION npm@$NPM_VERSION $(sha256sum <"$CA_BUNDLE") $(podman image inspect --format '{{.Id}}' "$OI_DEBIAN_IMAGE") $(oi_hash_files deploy/images/node)" | sha256sum | cut -c1-16)
  if fresh "$OI_NODE_IMAGE" "$hash"; then say "$OI_NODE_IMAGE is up to date"; return; fi
  local ctx=$OI_IMAGES_WORK/node-context
  rm -rf "$ctx" && mkdir -p "$ctx/npm"
  cp "$node_bin" "$ctx/node"
  # The npm package's binary carries its debug symbols: 18 MB the image does not need.
  if command -v strip >/dev/null; then strip "$ctx/node"; else say "strip not found (binutils): node keeps its symbols"; fi
  (cd "$OI_IMAGES_WORK" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$OI_IMAGES_WORK/npm-$NPM_VERSION.tgz" -C "$ctx/npm" --strip-components=1
  cp "$CA_BUNDLE" "$ctx/ca-certificates.crt"
  say "building $OI_NODE_IMAGE"
  "${BUILD[@]}" --quiet --build-arg "BASE_IMAGE=$OI_DEBIAN_IMAGE" --label "oi.inputs=$hash" \
    -f "$OI_IMAGES_DIR/node/Containerfile" -t "$OI_NODE_IMAGE" "$ctx" >"$OI_IMAGES_WORK/node-build.log" 2>&1 || { tail -20 "$OI_IMAGES_WORK/node-build.log" >&2; exit 1; }
}

server_image() { # image, folder under deploy/images
  local hash; hash=$(echo "$(podman image inspect --format '{{.Id}}' "$OI_DEBIAN_IMAGE") $(oi_hash_files "deploy/images/$2")" | sha256sum | cut -c1-16)
  if fresh "$1" "$hash"; then say "$1 is up to date"; return; fi
  say "building $1"
  "${BUILD[@]}" --quiet --build-arg "BASE_IMAGE=$OI_DEBIAN_IMAGE" --label "oi.inputs=$hash" \
    -f "$OI_IMAGES_DIR/$2/Containerfile" -t "$1" "$OI_IMAGES_DIR/$2" >"$OI_IMAGES_WORK/$2-build.log" 2>&1 || { tail -20 "$OI_IMAGES_WORK/$2-build.log" >&2; exit 1; }
}

app_image() {
  # What the Dockerfile copies into the image (see deploy/docker/Dockerfile.dockerignore).
  local inputs=(package.json package-lock.json tsconfig.json moleculer.config.ts shared gateway services runtime deploy/docker/Dockerfile deploy/docker/Dockerfile.dockerignore)
  local hash; hash=$(echo "$(podman image inspect --format '{{.Id}}' "$OI_NODE_IMAGE") $(oi_hash_files "${inputs[@]}")" | sha256sum | cut -c1-16)
  if fresh "$OI_APP_IMAGE" "$hash"; then say "$OI_APP_IMAGE is up to date"; else
    say "building $OI_APP_IMAGE from deploy/docker/Dockerfile on $OI_NODE_IMAGE"
    # The host's npm cache, seen through an overlay (the build's writes are thrown away): npm ci
    # takes the tarballs the lock file names from it instead of the registry.
    local cache=(); [ -d "$NPM_CACHE" ] && cache=(--volume "$NPM_CACHE:/root/.npm:O")
    "${BUILD[@]}" "${cache[@]}" --build-arg "NODE_IMAGE=$OI_NODE_IMAGE" --label "oi.inputs=$hash" \
      --ignorefile "$OI_REPO_ROOT/deploy/docker/Dockerfile.dockerignore" \
      -f "$OI_REPO_ROOT/deploy/docker/Dockerfile" -t "$OI_APP_IMAGE" "$OI_REPO_ROOT" >"$OI_IMAGES_WORK/app-build.log" 2>&1 \
      || { tail -30 "$OI_IMAGES_WORK/app-build.log" >&2; echo "FATAL: the project image did not build (log: $OI_IMAGES_WORK/app-build.log)" >&2; exit 1; }
  fi
  local bytes; bytes=$(podman image inspect --format '{{.Size}}' "$OI_APP_IMAGE")
  say "image size: $OI_APP_IMAGE $((bytes / 1000000)) MB (target ≤ 250 MB)"
}

started=$SECONDS
what=${1:-all}   # servers: the PostgreSQL and NATS images only; app: the project image only
case $what in all|servers|app) ;; *) echo "usage: $0 [all|servers|app]" >&2; exit 2 ;; esac
debian_base
if [ "$what" != app ]; then
  server_image "$OI_POSTGRES_IMAGE" postgres
  server_image "$OI_NATS_IMAGE" nats
fi
if [ "$what" != servers ]; then
  node_base
  app_image
fi
say "done in $((SECONDS - started)) s"
