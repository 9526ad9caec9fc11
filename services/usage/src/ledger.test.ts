import { createPgliteDb } from "@gw/db";
import { describeLedger } from "./testing/ledger-suite";

/** The ledger on PGlite, as the embedded default runs it. */
describeLedger("pglite", async () => {
  const db = await createPgliteDb();
  return { db, dispose: () => db.close() };
});
