import { createPgDb } from "@gw/db";
import { createTestDatabase } from "@gw/testkit";
import { describeLedger } from "./testing/ledger-suite";

/** The ledger on a real Postgres, a fresh database per suite. */
describeLedger("postgres", async () => {
  const database = await createTestDatabase();
  const db = createPgDb({ url: database.url, applicationName: "gw-usage-test" });
  return {
    db,
    async dispose() {
      await db.close();
      await database.drop();
    },
  };
});
