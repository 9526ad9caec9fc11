import { fileURLToPath } from "node:url";
import type { Bus } from "@gw/bus";
import { runMigrations, type Db } from "@gw/db";
import type { Logger } from "@gw/logger";
import { createMetrics, Health, startHttpServer, type RunningServer } from "@gw/service-kit";
import { createAdminApp } from "./admin/admin-app";
import { Authenticator } from "./auth/authenticator";
import type { BackendUrls } from "./proxy/forward";
import { createPublicApp } from "./public-app";
import { IdentityStore } from "./store/identity-store";

export interface IngressSettings {
  host: string;
  port: number;
  adminPort: number;
  adminToken: string;
  internalSecret: string;
  backends: BackendUrls;
  bodyLimitBytes: number;
  keyCacheTtlMs: number;
}

export interface IngressDeps {
  settings: IngressSettings;
  db: Db;
  bus: Bus;
  logger: Logger;
}

export interface IngressService {
  start(): Promise<{ url: string; adminUrl: string }>;
  stop(): Promise<void>;
  readonly authenticator: Authenticator;
}

export const ingressMigrations = fileURLToPath(new URL("../migrations", import.meta.url));

export function createIngressService(deps: IngressDeps): IngressService {
  const { settings, db, bus, logger } = deps;
  const metrics = createMetrics("ingress");
  const health = new Health();
  health.addCheck("postgres", () => db.ping());
  health.addCheck("nats", () => bus.ping());
  const store = new IdentityStore(db);
  const authenticator = new Authenticator(
    store,
    { ttlMs: settings.keyCacheTtlMs, negativeTtlMs: Math.min(settings.keyCacheTtlMs, 5_000), maxStaleMs: 10 * 60_000, maxEntries: 100_000 },
    logger,
  );
  const onIdentityChanged = (kind: "key" | "workspace", id: string) => {
    authenticator.cache.invalidate(kind, id);
  };
  let servers: RunningServer[] = [];
  let unsubscribe: (() => void) | undefined;

  return {
    authenticator,
    async start() {
      await runMigrations(db, { schema: "ingress", dir: ingressMigrations, logger });
      unsubscribe = bus.subscribe("identity.changed", (change) => onIdentityChanged(change.kind, change.id));
      const publicApp = createPublicApp({
        logger,
        metrics,
        health,
        authenticator,
        backends: settings.backends,
        internalSecret: settings.internalSecret,
        bodyLimitBytes: settings.bodyLimitBytes,
      });
      const adminApp = createAdminApp({ logger, metrics, store, bus, adminToken: settings.adminToken, onIdentityChanged });
      const pub = await startHttpServer(publicApp, settings.port, settings.host);
      const admin = await startHttpServer(adminApp, settings.adminPort, settings.host);
      servers = [pub, admin];
      logger.info({ url: pub.url, adminUrl: admin.url }, "ingress listening");
      return { url: pub.url, adminUrl: admin.url };
    },
    async stop() {
      health.startDraining();
      unsubscribe?.();
      await Promise.all(servers.map((s) => s.close(10_000)));
      servers = [];
    },
  };
}
