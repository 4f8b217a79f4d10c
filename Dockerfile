# The ctpool-tui image: one static binary on distroless, run as a non-root
# user (65532, the user the manifests' Deployment runs as). This project
# publishes no image; build it at your site and push it where your cluster
# pulls from:
#
#   make image-docker IMAGE=registry.example/ctpool-tui:1.0 && docker push registry.example/ctpool-tui:1.0
#
# (make image builds the same binary into an OCI archive without any container
# engine, on a base made from the build machine's files: docs/operations.md),
# or by hand, passing the version that `ctpool-tui version` shows:
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) \
#     -t registry.example/ctpool-tui:1.0 .

# -tags nodemo leaves out the simulated cluster of --demo and client-go's fake
# clientset, which a Deployment never runs (cmd/ctpool-tui/demo_nodemo.go).
FROM golang:1.26 AS build
WORKDIR /src
# The modules first, so that a change of the source reuses their layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags nodemo \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/ctpool-tui ./cmd/ctpool-tui

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/ctpool-tui /ctpool-tui
USER nonroot:nonroot
ENTRYPOINT ["/ctpool-tui"]
