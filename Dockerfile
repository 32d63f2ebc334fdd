# The operator image: the compiled controller on Node 24 (the same major package.json pins), bundled with its
# dependencies by esbuild (images/bundle.ts), running as a non-root user, with the pinned JMX exporter agent that
# PrometheusJmxExporter copies into containers (fetched from Maven Central and checked against its sha256 by the
# controller's own code).
FROM node:24.9.0-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts stay off: the image's own Node 24 is used, not the pinned one from the registry.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY controller ./controller
COPY charts ./charts
COPY imports ./imports
COPY images ./images
COPY cluster ./cluster
COPY test ./test
# Tests, and modules that import from outside the controller tree (smoke tests, `npm start`, samples), stay out;
# the controller and the PostgreSQL member agent are bundled from what is left: no node_modules in the image.
RUN npx tsc -p tsconfig.json && node build/images/bundle.js build/controller
RUN node build/controller/operators/prometheusjmxexporter/fetch-agent.js /opt/keelson/jmx_prometheus_javaagent.jar

FROM node:24.9.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# package.json gives the controller its release version.
COPY package.json ./
COPY --from=build /src/build/controller/bundle ./build/controller/bundle
COPY --from=build /opt/keelson/jmx_prometheus_javaagent.jar /opt/keelson/jmx_prometheus_javaagent.jar
ENV KEELSON_JMX_EXPORTER_AGENT=/opt/keelson/jmx_prometheus_javaagent.jar
USER 65532:65532
EXPOSE 8080 8081
# A young generation of 1 MiB semi-spaces: idle RSS after a 1,000-TDSet burst 148 -> 113 MiB with no loss of
# throughput (bench/results/before-after/small-young-generation.md). The benchmark runs Keelson with these flags.
# Source maps ship but are off: on, they held 11 MiB more (bench/results/before-after/bundle.md). The bundle is not
# minified, so stack traces name their functions; NODE_OPTIONS=--enable-source-maps maps them to the TypeScript.
ENTRYPOINT ["node", "--max-semi-space-size=1", "build/controller/bundle/main.js"]
