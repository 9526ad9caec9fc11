import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeDbContract } from "./db-contract";
import { runMigrations } from "./migrate";
import { createPgliteDb } from "./pglite-db";

describeDbContract("pglite (in memory)", async () => {
  const db = await createPgliteDb();
  return {
    db,
    // An in-memory PGlite cannot be opened twice; concurrent callers of one instance are the closest
    // stand-in for replicas, and exercise the same lock-and-recheck path.
    peer: async () => db,
    dispose: () => db.close(),
  };
});

describe("pglite: single connection", () => {
  const tempDirs: string[] = [];
  afterAll(async () => {
    await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("when transactions run concurrently, then their statements never interleave (no lost updates)", async () => {
    const db = await createPgliteDb();
    try {
      await db.exec("create table counter (n int); insert into counter values (0);");
      // Read-modify-write with an await in between: if another transaction's statements could run
      // inside this one on the shared connection, increments would be lost.
      const increment = (): Promise<void> =>
        db.transaction(async (tx) => {
          const { rows } = await tx.query<{ n: number }>("select n from counter");
          await new Promise((r) => setTimeout(r, 2));
          await tx.query("update counter set n = $1", [(rows[0]?.n ?? 0) + 1]);
        });
      await Promise.all(Array.from({ length: 20 }, increment));
      expect((await db.query("select n from counter")).rows).toEqual([{ n: 20 }]);

      // and the order of writes shows each transaction ran from BEGIN to COMMIT alone
      await db.exec("create table log (seq serial, who text)");
      const writer = (who: string) => () =>
        db.transaction(async (tx) => {
          for (let i = 0; i < 3; i++) {
            await tx.query("insert into log (who) values ($1)", [who]);
            await new Promise((r) => setTimeout(r, 1));
          }
        });
      await Promise.all(["a", "b", "c"].map((who) => writer(who)()));
      const { rows } = await db.query<{ who: string }>("select who from log order by seq");
      const order = rows.map((r) => r.who).join("");
      expect(order).toMatch(/^(aaa|bbb|ccc){3}$/);
    } finally {
      await db.close();
    }
  }, 60_000);

  it("when reopened on the same dataDir, then committed data and applied migrations persist", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "gw-pglite-"));
    const migrations = await mkdtemp(join(tmpdir(), "gw-pglite-migrations-"));
    tempDirs.push(dataDir, migrations);
    await writeFile(join(migrations, "0001_create.sql"), "create table notes (body text);");

    const first = await createPgliteDb({ dataDir: join(dataDir, "nested") });
    expect(await runMigrations(first, { schema: "app", dir: migrations })).toEqual(["0001_create"]);
    await first.query("insert into app.notes values ($1)", ["kept"]);
    await first.close();

    const second = await createPgliteDb({ dataDir: join(dataDir, "nested") });
    try {
      expect((await second.query("select body from app.notes")).rows).toEqual([{ body: "kept" }]);
      expect(await runMigrations(second, { schema: "app", dir: migrations })).toEqual([]);
    } finally {
      await second.close();
    }
  }, 60_000);

  it("when a bytea parameter is neither bytes nor text, then that statement is refused and the connection serves the next", async () => {
    const db = await createPgliteDb();
    try {
      await db.exec("create table blobs (body bytea)");
      await expect(db.query("insert into blobs values ($1)", [{ type: "Buffer", data: [1, 2] }])).rejects.toThrow(/bytea parameter takes bytes/);
      await expect(db.query("insert into blobs values ($1)", [42])).rejects.toThrow(/not number/);
      await db.query("insert into blobs values ($1), ($2)", [Buffer.from([1, 2]), "\\x0304"]);
      const { rows } = await db.query<{ body: Buffer }>("select body from blobs");
      expect(rows.map((r) => [...r.body])).toEqual([
        [1, 2],
        [3, 4],
      ]);
    } finally {
      await db.close();
    }
  }, 60_000);
});
