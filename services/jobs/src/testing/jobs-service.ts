import type { Bus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import type { Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import type { JobTimings } from "../dispatcher";
import { createJobsService, type JobsService } from "../service";

/** Plans with limits nothing here reaches; the jobs service reads only the catalog from the config. */
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const gateway = GatewayConfig.parse({ plans: { plus: limits, pro: limits, enterprise: limits } });

/**
 * A jobs service for tests, on a free port: ingress's admin URL points nowhere (no batch here asks
 * for admission), the body limit is 1 MiB unless given, the timings those of a day's job.
 */
export function testJobsService(options: { db: Db; bus: Bus; internalSecret: string; bodyLimitBytes?: number; timings?: Partial<JobTimings> }): JobsService {
  return createJobsService({
    db: options.db,
    bus: options.bus,
    logger: createLogger({ service: "jobs-test", level: "silent" }),
    gateway,
    settings: {
      host: "127.0.0.1",
      port: 0,
      internalSecret: options.internalSecret,
      bodyLimitBytes: options.bodyLimitBytes ?? 1024 * 1024,
      timings: { attemptTimeoutMs: 60_000, maxAttempts: 3, retentionMs: 3_600_000, sweepIntervalMs: 60_000, ...options.timings },
      ingressAdminUrl: () => "http://127.0.0.1:9",
    },
  });
}
