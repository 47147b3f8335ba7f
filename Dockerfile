# Multi-stage build: a static, pure-Go binary (SQLite is modernc.org/sqlite,
# no cgo) in an image with nothing else but CA certificates, run as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/deepresearch ./cmd/deepresearch \
 && mkdir -p /out/data \
 && echo 'deepresearch:x:65532:65532::/data:/sbin/nologin' > /out/passwd \
 && echo 'deepresearch:x:65532:' > /out/group

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/deepresearch /usr/local/bin/deepresearch
USER 65532:65532
WORKDIR /data
ENV DEEPRESEARCH_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/deepresearch"]
CMD ["serve"]
