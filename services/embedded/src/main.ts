import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { redactSecrets } from "@gw/logger";
import { exitOnConfigError, loadOrExit, runUntilSignal } from "@gw/service-kit";
import { embeddedBanner } from "./banner";
import { loadEmbeddedEnv } from "./config";
import { DataFolderError } from "./data-folder";
import { acquireDataFolderLock, type DataFolderLock } from "./data-folder-lock";
import { ensureDevelopmentWorkspace } from "./dev-workspace";
import { startEmbedded } from "./embedded";
import { generateAdminToken, generateInternalSecret, secretFileNames, suppliedOrKept, type ResolvedSecret } from "./secret-file";

const { config, logger } = loadOrExit("gateway", process.env.LOG_LEVEL, () => {
  const env = loadEmbeddedEnv(process.env);
  return { ...env, gateway: loadGatewayConfig(env.GATEWAY_CONFIG) };
});
const { gateway, ...env } = config;
const providerSecrets = resolveProviderSecrets(gateway, process.env);
const smtpPassword = env.GATEWAY_SMTP_URL ? decodeURIComponent(new URL(env.GATEWAY_SMTP_URL).password) || undefined : undefined;
redactSecrets(logger, [
  env.GATEWAY_ADMIN_TOKEN,
  env.GATEWAY_INTERNAL_SECRET,
  env.GATEWAY_MASTER_KEY,
  env.GATEWAY_OIDC_CLIENT_SECRET,
  env.GATEWAY_SMTP_URL,
  smtpPassword,
  ...Object.values(providerSecrets),
]);
const dataDir = env.GATEWAY_DATA_DIR;

/** A data-folder problem is the operator's to fix: one fatal line saying what and how, then exit 1. */
function orExit<T>(step: () => T): T {
  try {
    return step();
  } catch (err) {
    exitOnConfigError(logger, err);
  }
}

// PGlite is one process's database: hold the folder before reading or writing anything in it.
let lock: DataFolderLock | undefined;
if (!env.DATABASE_URL) {
  lock = orExit(() => acquireDataFolderLock(dataDir, { ports: { public: env.PORT, admin: env.ADMIN_PORT } }));
  const previous = lock.tookOverFrom;
  if (previous) {
    logger.warn(
      { lock: lock.path, previous },
      `took over the data folder's lock from pid ${previous.pid} (host ${previous.host}, started ${previous.started_at}), which is no longer running`,
    );
  }
}

// Generated once and kept, so the CLI, clients and (with NATS_URL) signed messages and sealed
// values of the previous run keep working after a restart.
const kept = (supplied: string | undefined, name: string, generate: () => string): ResolvedSecret => {
  const secret = orExit(() => suppliedOrKept(supplied, dataDir, name, generate));
  if (!secret.supplied && secret.tightened)
    logger.warn({ path: secret.path }, "a secret file was readable by others; it is 0600 again (consider replacing its secret)");
  return secret;
};
const adminToken = kept(env.GATEWAY_ADMIN_TOKEN, secretFileNames.adminToken, generateAdminToken);
const internalSecret = kept(env.GATEWAY_INTERNAL_SECRET, secretFileNames.internalSecret, generateInternalSecret);
redactSecrets(logger, [adminToken.value, internalSecret.value]);

await runUntilSignal(logger, async () => {
  const running = await startEmbedded(
    { ...env, GATEWAY_ADMIN_TOKEN: adminToken.value, GATEWAY_INTERNAL_SECRET: internalSecret.value },
    gateway,
    providerSecrets,
    logger,
  ).catch((err: unknown) => (err instanceof DataFolderError ? exitOnConfigError(logger, err) : Promise.reject(err)));
  lock?.update({ url: running.url, admin_url: running.adminUrl });
  const dev = await ensureDevelopmentWorkspace(running.adminUrl, running.adminToken);
  // The banner is for the person at the terminal, not a log line.
  process.stdout.write(embeddedBanner({ url: running.url, adminUrl: running.adminUrl, adminToken, dev, firstSignIn: running.firstSignIn }));
  return {
    async stop() {
      await running.stop();
      lock?.release();
    },
  };
});
