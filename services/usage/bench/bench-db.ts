import { createPgDb, type Db } from "@gw/db";
import { createUsageService, type UsageDeps, type UsageService } from "../src/service";

/** The internal secret every usage bench signs its bus messages and admin calls with. */
export const benchSecret = "usage-bench-internal-secret-0123456789";

/** The usage service under test, on a free port, with the default retention. */
export function benchUsageService(deps: Omit<UsageDeps, "settings">): UsageService {
  return createUsageService({ settings: { host: "127.0.0.1", port: 0, internalSecret: benchSecret, retentionDays: 400 }, ...deps });
}

/** A fresh database for one bench run, on the server `serverUrl` names, and its removal after. */
export async function benchDatabase(serverUrl: string, prefix: string, applicationName: string): Promise<{ db: Db; drop(): Promise<void> }> {
  const name = `${prefix}_${Date.now().toString(36)}`;
  const admin = createPgDb({ url: serverUrl, max: 1, applicationName: `${applicationName}-admin` });
  await admin.exec(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createPgDb({ url: url.toString(), applicationName });
  return {
    db,
    async drop() {
      await db.close();
      await admin.exec(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.close();
    },
  };
}
