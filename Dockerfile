# syntax=docker/dockerfile:1

# Build stage: a static, pure-Go steward binary, cross-compiled on the
# builder's own platform for the image's (docker buildx --platform
# linux/amd64,linux/arm64 sets TARGETOS and TARGETARCH; no emulation).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
# What steward version prints: the same -X stamp scripts/release sets
# (docs/releases.md). .git is not in the build context, so it comes here.
ARG VERSION=dev
ARG COMMIT=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags="-s -w -buildid= -X github.com/steward-run/steward/cmd/steward/app.stamp=${VERSION},${COMMIT}" \
      -o /steward ./cmd/steward \
 && mkdir -p /out/data

# Runtime stage: distroless, no shell, non-root (uid/gid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /steward /steward
# /data is where `steward dev` keeps its embedded JetStream files.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
EXPOSE 7700
VOLUME ["/data"]
ENTRYPOINT ["/steward"]
# Default: everything in one process with an embedded NATS. The compose
# file and the Kubernetes manifests override this with `serve --plane=...`.
CMD ["dev", "--addr", "0.0.0.0:7700", "--data", "/data"]
