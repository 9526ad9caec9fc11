// Test-only: the behaviour both Db implementations must share, run by pglite-db.test.ts and
// pg-db.int.test.ts. Not exported from index.ts, so production code never loads vitest.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMigrations } from "./migrate";
import type { Db } from "./types";

export interface OpenedDb {
  db: Db;
  /** Another handle onto the same database, standing in for a second replica. */
  peer(): Promise<Db>;
  /** Closes every handle and removes the database. */
  dispose(): Promise<void>;
}

/** Opens a brand-new, empty database. The contract opens one per suite plus a few to close on purpose. */
export type OpenDb = () => Promise<OpenedDb>;

const SLOW = 120_000; // opening may start a container or boot PGlite's WASM

export function describeDbContract(label: string, open: OpenDb): void {
  describe(`${label}: Db contract`, () => {
    let opened: OpenedDb;
    let db: Db;
    let counter = 0;
    // Tests share one database for speed and stay apart by each using its own schema.
    const freshSchema = async (): Promise<string> => {
      const schema = `c${++counter}_${Math.random().toString(36).slice(2, 8)}`;
      await db.exec(`create schema ${schema}`);
      return schema;
    };
    const tempDirs: string[] = [];
    const migrationsDir = async (files: Record<string, string>): Promise<string> => {
      const dir = await mkdtemp(join(tmpdir(), "gw-db-migrations-"));
      tempDirs.push(dir);
      for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql);
      return dir;
    };

    beforeAll(async () => {
      opened = await open();
      db = opened.db;
    }, SLOW);
    afterAll(async () => {
      await opened?.dispose();
      await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })));
    }, SLOW);

    describe("query and exec", () => {
      it("when a query has $n parameters, then rows come back with the bound values", async () => {
        const { rows, rowCount } = await db.query<{ a: number; b: string }>("select $1::int4 as a, $2::text as b", [7, "x"]);
        expect(rows).toEqual([{ a: 7, b: "x" }]);
        expect(rowCount).toBe(1);
      });

      it("when a statement is named, then it answers each run by its own values, in and out of a transaction", async () => {
        const sql = "select $1::int4 + 1 as n, $2::text as tag";
        const named = { name: "contract_named_statement" };
        const first = await db.query<{ n: number; tag: string }>(sql, [1, "a"], named);
        const again = await db.query<{ n: number; tag: string }>(sql, [41, "b"], named);
        const inTx = await db.transaction(async (tx) => {
          const { rows } = await tx.query<{ n: number; tag: string }>(sql, [99, "c"], named);
          // On pg the connection now holds it prepared under that name; PGlite has no named statements.
          const prepared = db.kind === "pg" ? (await tx.query("select statement from pg_prepared_statements where name = $1", [named.name])).rows : [];
          return { rows, prepared };
        });
        expect([first.rows, again.rows, inTx.rows]).toEqual([[{ n: 2, tag: "a" }], [{ n: 42, tag: "b" }], [{ n: 100, tag: "c" }]]);
        expect(inTx.prepared).toEqual(db.kind === "pg" ? [{ statement: sql }] : []);
      });

      it("when exec is given several statements, then all of them run", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (id int primary key); insert into ${s}.t values (1), (2); insert into ${s}.t values (3);`);
        const { rows } = await db.query(`select id from ${s}.t order by id`);
        expect(rows).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
      });

      it("when rows are updated, then rowCount is the number of affected rows", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (id int); insert into ${s}.t values (1), (2), (3);`);
        expect((await db.query(`update ${s}.t set id = id + 10 where id > $1`, [1])).rowCount).toBe(2);
        expect((await db.query(`delete from ${s}.t`)).rowCount).toBe(3);
      });

      it("when values of common types round-trip, then they come back as pg returns them", async () => {
        const at = new Date("2025-01-02T03:04:05.678Z");
        const { rows } = await db.query(
          "select count(*) as n, $1::int8 as big, $2::jsonb as doc, $3::timestamptz as at, $4::text[] as tags, $5::bool as flag, 1.50::numeric as price",
          ["9007199254740993", { a: [1, "two"] }, at, ["x", "y"], true],
        );
        // int8 and numeric as strings: they do not fit a JS number exactly.
        expect(rows[0]).toEqual({ n: "1", big: "9007199254740993", doc: { a: [1, "two"] }, at, tags: ["x", "y"], flag: true, price: "1.50" });
      });

      it("when bytes are stored as bytea, then every byte value comes back as a Buffer of the same bytes, empty and large alike", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.blobs (id int primary key, body bytea)`);
        const every = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
        // Large enough that a byte-at-a-time codec would show in the suite's time; a view into a
        // bigger buffer, as a slice of a stream's chunk is, so only its own bytes may be sent.
        const large = Buffer.alloc(3_000_000 + 16, 0xee).subarray(8, 3_000_008);
        for (let i = 0; i < large.length; i += 997) large[i] = i & 255;
        const values = [every, Buffer.alloc(0), large, new Uint8Array([0, 92, 120, 39])];
        for (const [id, body] of values.entries()) await db.query(`insert into ${s}.blobs values ($1, $2)`, [id, body]);
        const { rows } = await db.query<{ id: number; body: Buffer; n: number }>(`select id, body, length(body) as n from ${s}.blobs order by id`);
        expect(rows.map((r) => r.n)).toEqual(values.map((v) => v.length));
        for (const [id, body] of values.entries()) {
          expect(Buffer.isBuffer(rows[id]!.body)).toBe(true);
          expect(rows[id]!.body.equals(body)).toBe(true);
        }
        const { rows: piece } = await db.query<{ p: Buffer }>(`select substring(body from 2 for 4) as p from ${s}.blobs where id = 3`);
        expect([...piece[0]!.p]).toEqual([92, 120, 39]);
        // Bytes inside an array parameter, and an array of bytes coming back.
        const { rows: unnested } = await db.query<{ b: Buffer; all: Buffer[] }>("select b, $1::bytea[] as all from unnest($1::bytea[]) as b", [
          [every.subarray(250, 262), Buffer.alloc(0)],
        ]);
        expect(unnested.map((r) => [...r.b])).toEqual([[...every.subarray(250, 262)], []]);
        expect(unnested[0]!.all.map((b) => Buffer.isBuffer(b) && b.length)).toEqual([12, 0]);
      });

      it("when a text parameter holds U+0000, then the error carries SQLSTATE 22021 (the gateway answers it with a 400)", async () => {
        await expect(db.query("select $1::text as t", ["a\u0000b"])).rejects.toMatchObject({ code: "22021" });
        // The connection is still usable after the refusal.
        expect((await db.query<{ t: string }>("select $1::text as t", ["a\uFFFDb"])).rows[0]?.t).toBe("a\uFFFDb");
      });

      it("when a unique constraint is violated, then the error carries SQLSTATE 23505", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (id int primary key); insert into ${s}.t values (1);`);
        await expect(db.query(`insert into ${s}.t values ($1)`, [1])).rejects.toMatchObject({ code: "23505" });
      });
    });

    describe("transaction", () => {
      it("when the callback resolves, then its writes are committed and its value returned", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (id int)`);
        const value = await db.transaction(async (tx) => {
          await tx.query(`insert into ${s}.t values ($1)`, [1]);
          await tx.exec(`insert into ${s}.t values (2); insert into ${s}.t values (3);`);
          return "done";
        });
        expect(value).toBe("done");
        expect((await db.query(`select * from ${s}.t`)).rowCount).toBe(3);
      });

      it("when the callback throws, then its writes are rolled back and the same error is rethrown", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (id int)`);
        const boom = new Error("boom");
        await expect(
          db.transaction(async (tx) => {
            await tx.query(`insert into ${s}.t values (1)`);
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect((await db.query(`select * from ${s}.t`)).rowCount).toBe(0);
      });

      it("when a statement fails and the callback swallows the error, then nothing is committed and transaction() rejects", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (id int primary key)`);
        await expect(
          db.transaction(async (tx) => {
            await tx.query(`insert into ${s}.t values (1)`);
            await tx.query(`insert into ${s}.t values (1)`).catch(() => undefined);
          }),
        ).rejects.toThrow();
        expect((await db.query(`select * from ${s}.t`)).rowCount).toBe(0);
      });

      it("when the transaction handle is used after the transaction ended, then it rejects", async () => {
        let leaked: { query(sql: string): Promise<unknown> } | undefined;
        await db.transaction(async (tx) => {
          leaked = tx;
        });
        await expect(leaked?.query("select 1")).rejects.toThrow(/closed/i);
      });

      it("when the outer Db is used inside its own transaction, then the call is refused instead of escaping it", async () => {
        await expect(db.transaction(() => db.query("select 1"))).rejects.toThrow(/inside db\.transaction/);
        await expect(db.transaction(() => db.transaction(async () => 1))).rejects.toThrow(/inside db\.transaction/);
        // and the Db is usable again afterwards
        expect((await db.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
      });

      it("when one transaction rolls back while other writes run concurrently, then only its own writes are undone", async () => {
        const s = await freshSchema();
        await db.exec(`create table ${s}.t (who text)`);
        const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));
        const failing = db.transaction(async (tx) => {
          await tx.query(`insert into ${s}.t values ('rolled-back')`);
          await tick();
          await tx.query(`insert into ${s}.t values ('rolled-back')`);
          throw new Error("abort");
        });
        const committing = db.transaction(async (tx) => {
          await tx.query(`insert into ${s}.t values ('tx')`);
          await tick();
          await tx.query(`insert into ${s}.t values ('tx')`);
        });
        const plain = (async () => {
          await tick();
          await db.query(`insert into ${s}.t values ('plain')`);
        })();
        const results = await Promise.allSettled([failing, committing, plain]);
        expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
        const { rows } = await db.query<{ who: string }>(`select who from ${s}.t order by who`);
        expect(rows.map((r) => r.who)).toEqual(["plain", "tx", "tx"]);
      });
    });

    describe("ping and close", () => {
      it(
        "when the database answers, then ping is true; after close it is false and close can be repeated",
        async () => {
          const other = await open();
          try {
            expect(await other.db.ping()).toBe(true);
            await other.db.close();
            await other.db.close();
            expect(await other.db.ping()).toBe(false);
          } finally {
            await other.dispose();
          }
        },
        SLOW,
      );
    });

    describe("runMigrations", () => {
      const schemaName = (): string => `m${++counter}_${Math.random().toString(36).slice(2, 8)}`;

      it("when migrations are pending, then they are applied in file order and their names returned", async () => {
        const schema = schemaName();
        const dir = await migrationsDir({
          "0002_add_column.sql": "alter table items add column note text;",
          "0001_create.sql": "create table items (id int primary key);\ncreate index items_id on items (id);",
          "README.md": "not a migration",
        });
        expect(await runMigrations(db, { schema, dir })).toEqual(["0001_create", "0002_add_column"]);
        // unqualified names in the files landed in the migration's schema
        await db.query(`insert into ${schema}.items (id, note) values (1, 'n')`);
        const { rows } = await db.query(`select name from ${schema}.schema_migrations order by name`);
        expect(rows).toEqual([{ name: "0001_create" }, { name: "0002_add_column" }]);
      });

      it("when run again, then nothing is re-applied; when a file is added, then only it is applied", async () => {
        const schema = schemaName();
        const files: Record<string, string> = {
          "0001_create.sql": "create table counter (n int); insert into counter values (1);",
        };
        const dir = await migrationsDir(files);
        expect(await runMigrations(db, { schema, dir })).toEqual(["0001_create"]);
        expect(await runMigrations(db, { schema, dir })).toEqual([]);
        await writeFile(join(dir, "0002_bump.sql"), "update counter set n = n + 1;");
        expect(await runMigrations(db, { schema, dir })).toEqual(["0002_bump"]);
        expect((await db.query(`select n from ${schema}.counter`)).rows).toEqual([{ n: 2 }]);
      });

      it("when a migration fails, then its changes and its record are rolled back and later files are not applied", async () => {
        const schema = schemaName();
        const dir = await migrationsDir({
          "0001_ok.sql": "create table a (id int);",
          "0002_bad.sql": "create table b (id int); select no_such_function();",
          "0003_later.sql": "create table c (id int);",
        });
        await expect(runMigrations(db, { schema, dir })).rejects.toThrow(/0002_bad/);
        const { rows } = await db.query<{ table_name: string }>(
          "select table_name from information_schema.tables where table_schema = $1 order by table_name",
          [schema],
        );
        expect(rows.map((r) => r.table_name)).toEqual(["a", "schema_migrations"]);
        const recorded = await db.query(`select name from ${schema}.schema_migrations`);
        expect(recorded.rows).toEqual([{ name: "0001_ok" }]);
      });

      it("when two schemas are migrated, then each keeps its own record", async () => {
        const [one, two] = [schemaName(), schemaName()];
        const dir = await migrationsDir({ "0001_create.sql": "create table items (id int);" });
        expect(await runMigrations(db, { schema: one, dir })).toEqual(["0001_create"]);
        expect(await runMigrations(db, { schema: two, dir })).toEqual(["0001_create"]);
      });

      it("when the schema name or a file name is invalid, then nothing runs and the error names it", async () => {
        const dir = await migrationsDir({ "0001_create.sql": "create table items (id int);" });
        await expect(runMigrations(db, { schema: 'x"; drop', dir })).rejects.toThrow(/schema name/);
        const badName = await migrationsDir({ "1_create.sql": "select 1;" });
        await expect(runMigrations(db, { schema: schemaName(), dir: badName })).rejects.toThrow(/1_create\.sql/);
        const sameNumber = await migrationsDir({ "0001_a.sql": "select 1;", "0001_b.sql": "select 1;" });
        await expect(runMigrations(db, { schema: schemaName(), dir: sameNumber })).rejects.toThrow(/share the number 0001/);
      });

      it("when several replicas migrate the same schema at once, then each migration is applied exactly once", async () => {
        const schema = schemaName();
        // Each file fails if run twice (plain CREATE TABLE / a primary key), so a double apply would surface as an error.
        const files: Record<string, string> = {};
        for (let i = 1; i <= 6; i++) {
          files[`000${i}_step.sql`] = `create table t${i} (id int primary key); insert into t${i} values (1);`;
        }
        const dir = await migrationsDir(files);
        const replicas = [db, await opened.peer(), await opened.peer()];
        const runs = await Promise.all(replicas.map((replica) => runMigrations(replica, { schema, dir })));
        const appliedByAll = runs.flat().sort();
        expect(appliedByAll).toEqual(Object.keys(files).map((f) => f.replace(/\.sql$/, "")));
        for (let i = 1; i <= 6; i++) {
          expect((await db.query(`select count(*) as n from ${schema}.t${i}`)).rows).toEqual([{ n: "1" }]);
        }
      });
    });
  });
}
