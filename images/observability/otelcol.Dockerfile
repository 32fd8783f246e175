# svc-otelcol:local, the OpenTelemetry Collector of compose/observability.yml, without a registry:
# the static binary scripts/build-otelcol.sh builds from the Go module proxy, on the Debian base of
# scripts/build-base-images.sh. scripts/build-observability-images.sh builds it (the context is a
# directory holding the binary as svc-otelcol). With a registry, OTELCOL_IMAGE can name the official
# otel/opentelemetry-collector image instead: it reads the same /etc/otelcol/config.yaml.
ARG DEBIAN_BASE=svc-base-debian:local
FROM ${DEBIAN_BASE}
COPY svc-otelcol /usr/local/bin/svc-otelcol
ENTRYPOINT ["/usr/local/bin/svc-otelcol"]
CMD ["--config", "file:/etc/otelcol/config.yaml"]
LABEL svc.kind=otelcol
