import { fileURLToPath } from "node:url";
import type { Bus } from "@gw/bus";
import { runMigrations, type Db } from "@gw/db";
import type { Logger } from "@gw/logger";
import { createInternalHttp } from "@gw/service-kit";

export interface JobsSettings {
  host: string;
  port: number;
  internalSecret: string;
}

export interface JobsDeps {
  settings: JobsSettings;
  db: Db;
  bus: Bus;
  logger: Logger;
}

export interface JobsService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

export const jobsMigrations = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * The jobs service: job and research state in the `jobs` schema. Its async routes arrive with the
 * async-jobs work; until then every /v1 call is answered 404 in the route's envelope.
 */
export function createJobsService(deps: JobsDeps): JobsService {
  const http = createInternalHttp({
    name: "jobs",
    logger: deps.logger,
    host: deps.settings.host,
    port: deps.settings.port,
    internalSecret: deps.settings.internalSecret,
    checks: { postgres: () => deps.db.ping(), nats: () => deps.bus.ping() },
    mount() {},
  });
  return {
    async start() {
      await runMigrations(deps.db, { schema: "jobs", dir: jobsMigrations, logger: deps.logger });
      return { url: (await http.start()).url };
    },
    stop: () => http.stop(),
  };
}
