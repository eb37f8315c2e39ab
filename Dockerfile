# Troupe as an image: production dependencies only, run as the unprivileged `node` user, healthy once /ready answers.
# Build: docker build -t troupe . — run one node: docker run -p 8080:8080 -v troupe-data:/data troupe
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/check-node.mjs scripts/check-node.mjs
COPY packages/api/package.json packages/api/package.json
COPY packages/server/package.json packages/server/package.json
COPY packages/client/package.json packages/client/package.json
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    TROUPE_DATA_DIR=/data \
    NODE_OPTIONS=--no-node-snapshot
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY packages ./packages
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# HTTP, and the runner port other nodes of a PostgreSQL cluster reach (TROUPE_RUNNER_PORT, default PORT + 1000)
EXPOSE 8080 9080
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# SIGTERM drains requests and hands the node's shards over before exit 0
STOPSIGNAL SIGTERM
CMD ["node", "--experimental-strip-types", "--disable-warning=ExperimentalWarning", "packages/server/src/main.ts"]
