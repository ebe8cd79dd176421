# One image for every autocoder binary. The sandbox-worker in it uses the
# process backend (bubblewrap, which needs --privileged or user namespaces)
# or, with the Docker socket mounted and AUTOCODER_SANDBOX=docker, the Docker backend.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
# Only the Go sources: .dockerignore (an allow-list) keeps everything else,
# deploy/compose's secrets and tokens, .git and .state among it, out of the
# build context, and these COPYs out of the stage whatever the context holds.
COPY cmd ./cmd
COPY internal ./internal
COPY pkg ./pkg
RUN CGO_ENABLED=0 go build -trimpath -o /out/ ./cmd/...

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      bubblewrap python3 python3-pytest python3-pandas python3-numpy python3-pip python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
ENV AUTOCODER_STATE_DIR=/var/lib/autocoder
