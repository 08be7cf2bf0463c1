# syntax=docker/dockerfile:1
#
# The collector's image: a static binary (scripts/release-build.sh, the same
# command as a local release build) on distroless static, as user nonroot.
#
#   docker build -t collector:0.1.0 \
#     --build-arg VERSION="$(cat VERSION)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#   docker build --target apisim -t collector-apisim .    # the API simulator (Compose)
#
# Without --build-arg VERSION the binary says VERSION-dev (0.1.0-dev): the
# file VERSION is in the build context (.dockerignore), .git is not.
#
# Run: mount a config at /etc/collector/collector.yaml (or use the built-in
# one below, driven by COLLECTOR_* variables) and a volume at /data. The
# entry point is the binary and the default command "run", so any command
# works without --entrypoint:
#
#   docker run --rm collector check --config /etc/collector/collector.yaml --offline
#   docker run --rm collector version
#
# Base images: Renovate (renovate.json) pins the two ARGs below by digest
# (IMAGE:TAG@sha256:...) in its first pull request and keeps tag and digest
# current after; until then the tags alone are used (the digests could not
# be checked from where this file was written). To pin by hand: `crane digest IMAGE:TAG` or
# `docker buildx imagetools inspect IMAGE:TAG`, then
#   --build-arg BUILD_IMAGE=golang:1.26.8-bookworm@sha256:<digest> \
#   --build-arg RUNTIME_IMAGE=gcr.io/distroless/static-debian13:nonroot@sha256:<digest>

ARG BUILD_IMAGE=golang:1.26.8-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian13:nonroot

FROM --platform=$BUILDPLATFORM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
ARG VERSION="" COMMIT=unknown DATE=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH VERSION=$VERSION COMMIT=$COMMIT DATE=$DATE \
    scripts/release-build.sh /out collector apisim
# /data belongs to nonroot (65532) so that a fresh volume there is writable.
RUN mkdir -p /rootfs/data && chown 65532:65532 /rootfs/data && chmod 0700 /rootfs/data

# The API simulator, for Compose and demos: `apisim --help` lists its knobs.
FROM ${RUNTIME_IMAGE} AS apisim
COPY --from=build /out/apisim /apisim
EXPOSE 8080
ENTRYPOINT ["/apisim", "--listen", "0.0.0.0:8080"]

# The collector (default target).
FROM ${RUNTIME_IMAGE} AS collector
ARG VERSION="" COMMIT=unknown DATE=unknown
LABEL org.opencontainers.image.title="collector" \
      org.opencontainers.image.description="Exports a cloud security platform's activity and audit data into Kafka, ClickHouse or files" \
      org.opencontainers.image.source="https://github.com/svcexport/collector" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${DATE}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/collector /collector
COPY --from=build --chown=65532:65532 /rootfs/data /data
# Built-in configuration: replace it by mounting your own file (or a
# ConfigMap) at /etc/collector/collector.yaml. As is, it needs
# COLLECTOR_API__BASE_URL, COLLECTOR_API__KEY_ID and COLLECTOR_API__SECRET and
# writes NDJSON to /data/out; every key can be set the same way (see
# configs/collector.yaml).
COPY <<YAML /etc/collector/collector.yaml
checkpoint:
  path: /data/checkpoint.db
sink:
  type: file
  file:
    dir: /data/out
metrics:
  listen: 0.0.0.0:9464
  # /tap (collector tap) is off: turning it on here needs metrics.tap.token_file
log:
  format: json
YAML
USER 65532:65532
VOLUME ["/data"]
EXPOSE 9464
# GET /readyz of the running collector (distroless has no curl): the
# metrics address comes from COLLECTOR_METRICS__LISTEN when set, else
# 127.0.0.1:9464. Kubernetes uses its own HTTP probes instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/collector", "healthcheck"]
ENTRYPOINT ["/collector"]
CMD ["run", "--config", "/etc/collector/collector.yaml"]
