import { mkdir } from "node:fs/promises";
import { PGlite } from "@electric-sql/pglite";
import type { Results } from "@electric-sql/pglite";
import { createTransactionGuard } from "./transaction-guard";
import type { Db, QueryResult } from "./types";

export interface PgliteDbOptions {
  /** Folder holding the database files; created if missing. Undefined keeps everything in memory. */
  dataDir?: string;
}

// PGlite turns int8 into a JS number; pg (and so production) returns a string, because int8 does not
// fit a double. Returning the string here too keeps `count(*)` and bigint ids identical in both modes.
const INT8_OID = 20;
const BYTEA_OID = 17;

/**
 * PGlite's own bytea serializer and parser go byte by byte in JavaScript (a 20 MB job result took
 * seconds each way, and its garbage as long again): a bytea parameter goes as the bytes themselves,
 * in the protocol's binary format, as pg sends a Buffer, and a bytea value comes back as a Buffer,
 * as pg gives it, decoded from its hex text natively.
 */
const fastBytea = {
  serializers: { [BYTEA_OID]: byteaParameter },
  parsers: { [BYTEA_OID]: (value: string) => Buffer.from(value.slice(2), "hex") },
};

/**
 * Bytes as they are (PGlite's writer sends them in binary), text as bytea's text input. Anything
 * else is refused here, before a byte of the statement is written: the writer would fail halfway
 * and leave the one connection's next statement, perhaps another caller's, malformed.
 */
function byteaParameter(value: unknown): string {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return value as unknown as string;
  if (typeof value === "string") return value;
  throw new TypeError(`A bytea parameter takes bytes (a Buffer or Uint8Array) or text, not ${value === null ? "null" : typeof value}`);
}

/**
 * PGlite's array serializer writes each element as text, so the bytes inside an array parameter
 * (bytea[]) go as hex text, as pg sends them; only a bytea parameter of its own goes in binary.
 */
function withByteaArraysAsHex(params: unknown[] | undefined): unknown[] | undefined {
  if (!params?.some((p) => Array.isArray(p) && holdsBytes(p))) return params;
  return params.map((p) => (Array.isArray(p) ? hexElements(p) : p));
}

const holdsBytes = (values: unknown[]): boolean => values.some((v) => v instanceof Uint8Array || (Array.isArray(v) && holdsBytes(v)));

function hexElements(values: unknown[]): unknown[] {
  return values.map((v) =>
    v instanceof Uint8Array ? `\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}` : Array.isArray(v) ? hexElements(v) : v,
  );
}

/**
 * A `Db` over embedded PGlite. PGlite is one connection: its own `query`, `exec` and `transaction`
 * share one mutex, so a transaction runs alone from BEGIN to COMMIT and no other caller's statement
 * can land inside it (pglite-db.test.ts checks this). This wrapper therefore adds no lock of its own.
 */
export async function createPgliteDb(options: PgliteDbOptions = {}): Promise<Db> {
  if (options.dataDir !== undefined) await mkdir(options.dataDir, { recursive: true });
  const pglite = await PGlite.create({
    dataDir: options.dataDir,
    parsers: { [INT8_OID]: (value: string) => value, ...fastBytea.parsers },
    serializers: fastBytea.serializers,
  });
  const guard = createTransactionGuard();
  let closing: Promise<void> | undefined;

  return {
    kind: "pglite",
    async query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<R>> {
      guard.assertOutside("query");
      return toResult<R>(await pglite.query<R>(sql, withByteaArraysAsHex(params)));
    },
    async exec(sql) {
      guard.assertOutside("exec");
      await pglite.exec(sql);
    },
    async transaction(fn) {
      guard.assertOutside("transaction");
      return pglite.transaction((tx) =>
        guard.run(() =>
          fn({
            async query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<R>> {
              return toResult<R>(await tx.query<R>(sql, withByteaArraysAsHex(params)));
            },
            async exec(sql) {
              await tx.exec(sql);
            },
          }),
        ),
      );
    },
    async ping() {
      try {
        await pglite.query("select 1");
        return true;
      } catch {
        return false;
      }
    },
    close() {
      // PGlite flushes to dataDir on close; make repeated shutdown calls share that one close.
      closing ??= pglite.closed ? Promise.resolve() : pglite.close();
      return closing;
    },
  };
}

function toResult<R>(res: Results<R>): QueryResult<R> {
  return { rows: res.rows, rowCount: res.rowCount ?? res.affectedRows ?? 0 };
}
