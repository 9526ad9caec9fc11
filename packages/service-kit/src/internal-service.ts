import type { Express } from "express";
import { buildInfo } from "@gw/config";
import type { Logger } from "@gw/logger";
import { REPORTS_ERROR_TYPE, createServiceApp, finishApp, type ServiceAppOptions } from "./app";
import { Health, type ReadinessCheck } from "./health";
import { requireIdentity } from "./identity";
import { createMetrics, type ServiceMetrics } from "./metrics";
import { startHttpServer, type RunningServer } from "./server";

export interface InternalServiceOptions {
  name: string;
  logger: Logger;
  host: string;
  port: number;
  internalSecret: string;
  checks: Record<string, ReadinessCheck>;
  /** Mounts the service's /v1 routes; they run only for calls signed by ingress. */
  mount(app: Express, metrics: ServiceMetrics): void;
  /** Called as each request's response closes (ServiceAppOptions.onClose). */
  onClose?: ServiceAppOptions["onClose"];
}

export interface InternalHttp {
  start(): Promise<RunningServer>;
  /** Not ready → stop accepting → let in-flight requests and streams finish (bounded). */
  stop(graceMs?: number): Promise<void>;
  readonly metrics: ServiceMetrics;
}

/**
 * The HTTP side shared by inference, tools and jobs: /livez, /readyz and /metrics unauthenticated on
 * the service's own port, /v1 behind the signed identity, errors in the route's envelope.
 */
export function createInternalHttp(options: InternalServiceOptions): InternalHttp {
  const metrics = createMetrics(options.name);
  const health = new Health();
  for (const [name, check] of Object.entries(options.checks)) health.addCheck(name, check);
  let server: RunningServer | undefined;
  return {
    metrics,
    async start() {
      const app = createServiceApp({ logger: options.logger, metrics, trustRequestId: true, onClose: options.onClose });
      app.locals[REPORTS_ERROR_TYPE] = true;
      health.mount(app);
      app.get("/metrics", async (_req, res) => {
        res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
      });
      app.use("/v1", requireIdentity(options.internalSecret, options.logger));
      options.mount(app, metrics);
      finishApp(app);
      server = await startHttpServer(app, options.port, options.host);
      options.logger.info({ url: server.url, ...buildInfo() }, `${options.name} listening`);
      return server;
    },
    async stop(graceMs = 10_000) {
      health.startDraining();
      await server?.close(graceMs);
      server = undefined;
    },
  };
}
