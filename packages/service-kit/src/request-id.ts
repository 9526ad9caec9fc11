import { randomUUID } from "node:crypto";

/**
 * A new request id: `req_` and 32 hex digits, the first 12 the time in milliseconds since the epoch
 * (as UUIDv7 begins), the other 20 random (80 bits). Ids in time order go into the ledger's primary
 * key at its end rather than on a random page of it: at a million records, a fifth less of Postgres's
 * CPU a record (bench/README.md).
 */
export function newRequestId(now = Date.now()): string {
  // xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx: the 8, 4 and 8 digits taken have no fixed bits.
  const random = randomUUID();
  return `req_${now.toString(16).padStart(12, "0")}${random.slice(0, 8)}${random.slice(9, 13)}${random.slice(28)}`;
}
