# One image for every Floe service; the subcommand picks the service (`floe writer`, …).
FROM node:24-bookworm-slim AS deps
WORKDIR /app
RUN npm install -g pnpm@10.34.9
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
COPY packages packages
COPY services services
COPY proto proto
RUN pnpm install --frozen-lockfile --prod=false

FROM node:24-bookworm-slim
WORKDIR /app
COPY --from=deps /app /app
USER node
ENTRYPOINT ["node", "packages/cli/bin/floe.js"]
CMD ["all"]
