# syntax=docker/dockerfile:1
#
# The collector's image: a static binary (scripts/release-build.sh, the same
# command as a local release build) on distroless static, as user nonroot.
#
#   docker build -t collector \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#   docker build --target apisim -t collector-apisim .    # the API simulator (Compose)
#
# Run: mount a config at /etc/collector/collector.yaml (or use the built-in
# one below, driven by COLLECTOR_* variables) and a volume at /data.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
ARG VERSION=dev COMMIT=unknown DATE=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH VERSION=$VERSION COMMIT=$COMMIT DATE=$DATE \
    scripts/release-build.sh /out collector apisim
# /data belongs to nonroot (65532) so that a fresh volume there is writable.
RUN mkdir -p /rootfs/data && chown 65532:65532 /rootfs/data && chmod 0700 /rootfs/data

# The API simulator, for Compose and demos: `apisim --help` lists its knobs.
FROM gcr.io/distroless/static-debian13:nonroot AS apisim
COPY --from=build /out/apisim /apisim
EXPOSE 8080
ENTRYPOINT ["/apisim", "--listen", "0.0.0.0:8080"]

# The collector (default target).
FROM gcr.io/distroless/static-debian13:nonroot AS collector
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
log:
  format: json
YAML
USER 65532:65532
VOLUME ["/data"]
EXPOSE 9464
ENTRYPOINT ["/collector", "run", "--config", "/etc/collector/collector.yaml"]
