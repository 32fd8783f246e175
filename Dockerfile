# The svc engine image: the engine, the `svc` CLI and the built-in workers (svc-state, svc-http, svc-cron),
# plus the SDKs and images/ so that an engine in a container can build and run worker containers
# (mount the Docker socket and the project directory). docs/docker.md.
#
# Base: the official Node.js image by default; offline, scripts/build-base-images.sh makes
# svc-base-node:local:  docker build --build-arg NODE_BASE=svc-base-node:local -t svc-engine .
ARG NODE_BASE=node:20-bookworm-slim

FROM ${NODE_BASE} AS build
WORKDIR /src
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
# Dependencies first: a change to the sources alone reuses this layer.
COPY package.json package-lock.json ./
COPY sdk/typescript/package.json sdk/typescript/
COPY console/package.json console/
RUN npm ci
COPY . .
RUN npm run build \
 && npm run build:console \
 && npm prune --omit=dev \
 && rm -rf dist/test dist/e2e dist/bench

FROM ${NODE_BASE}
WORKDIR /opt/svc
COPY --from=build /src/package.json /src/package-lock.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/dist dist
COPY --from=build /src/bin bin
COPY --from=build /src/oclif.manifest.json ./
COPY --from=build /src/sdk/typescript/package.json sdk/typescript/package.json
COPY --from=build /src/sdk/typescript/dist sdk/typescript/dist
COPY --from=build /src/sdk/python sdk/python
COPY --from=build /src/console/dist console/dist
COPY --from=build /src/images images
COPY --from=build /src/templates templates
COPY --from=build /src/worker-templates worker-templates
RUN ln -s /opt/svc/bin/svc.js /usr/local/bin/svc && svc --version
# The project (config.yaml, workers, .svc/ logs) is mounted here; compose and docs/docker.md do so.
WORKDIR /project
ENV SVC_URL=ws://127.0.0.1:49134
EXPOSE 49134 3111 3113
LABEL org.opencontainers.image.title="svc engine"
ENTRYPOINT ["svc"]
CMD ["start", "--config", "/project/config.yaml"]
