# svc-prometheus:local, the Prometheus of compose/observability.yml, without a registry: Debian's
# `prometheus` package from the Debian mirror, on the base of scripts/build-base-images.sh.
# scripts/build-observability-images.sh builds it. With a registry, PROMETHEUS_IMAGE can name the
# official prom/prometheus image instead: its entrypoint takes the same flags.
ARG DEBIAN_BASE=svc-base-debian:local
FROM ${DEBIAN_BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
LABEL svc.kind=prometheus
