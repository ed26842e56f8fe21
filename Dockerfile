# syntax=docker/dockerfile:1
# The service's image: `docker build -t mfa .`, then README "With containers" for what to set.
# Where no container engine runs (CI), test/container/ runs this file's RUN steps and its CMD in a
# clean folder and checks its settings: change them here and the test follows.

# Build stage: the development dependencies too, since esbuild (one of them) bundles src/ and web/
# into dist/; then only the production dependencies are kept for the run stage.
FROM node:20-bookworm AS build
WORKDIR /app
COPY . .
# The full image has python3, make and g++, with which better-sqlite3 compiles itself when no
# prebuilt binary fits. `npm ci` already builds dist/ (the prepare script): the build step then
# finds it up to date, and is written out so that the image does not depend on that script.
RUN --mount=type=cache,target=/root/.npm npm ci
RUN npm run build
RUN npm prune --omit=dev

# Run stage: package.json, the pruned node_modules and dist/, nothing else (no npm cache, no
# source, no compiler), as the image's unprivileged `node` user.
FROM node:20-bookworm-slim
WORKDIR /app
# HOST: reachable from outside the container. The default database is a SQLite file on the /data
# volume; several nodes need DATABASE_URL=postgres://… instead (compose.yaml). NODE_ENV=production
# refuses console SMS and a missing SECRET_KEY: set SECRET_KEY and the Twilio variables.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATABASE_URL=sqlite:/data/mfa.sqlite
# The allocator settings of src/start-settings.ts (START_ENV, whose values test/container/
# compares with these): they take effect only at process start, and the service relaunches itself
# to apply them unless MALLOC_ARENA_MAX is set. Set here, with the V8 flags in CMD, they apply to
# the one process started: there is no launcher process. UV_THREADPOOL_SIZE is the machine's to
# say: unset, libuv runs 4 threads; set it to the container's CPU count (-e UV_THREADPOOL_SIZE=2
# on two cores, where Argon2 logs in faster with 2 threads than with 4).
ENV MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=1048576 \
    MALLOC_TRIM_THRESHOLD_=1048576 \
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1
RUN install -d -o node -g node /data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
VOLUME /data
EXPOSE 8000
# The slim image has no curl: Node's own fetch asks /healthz on the port the service listens on.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM: the service stops accepting connections, finishes the requests in flight, closes the
# database and exits 0. It runs as PID 1 without an init: it handles SIGTERM and SIGINT itself.
STOPSIGNAL SIGTERM
# V8_FLAGS of src/start-settings.ts.
CMD ["node", "--max-semi-space-size=2", "--heap-growing-percent=25", "dist/main.js"]
