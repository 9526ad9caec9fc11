import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import { describeDbContract } from "./db-contract";
import { runMigrations } from "./migrate";
import { createPgDb } from "./pg-db";
import type { Db } from "./types";

describeDbContract("pg", async () => {
  const database = await createTestDatabase();
  const handles: Db[] = [];
  const connect = (): Db => {
    const db = createPgDb({ url: database.url, applicationName: "gw-db-contract" });
    handles.push(db);
    return db;
  };
  return {
    db: connect(),
    // A separate pool is what a second replica would have.
    peer: async () => connect(),
    dispose: async () => {
      await Promise.all(handles.map((h) => h.close()));
      await database.drop();
    },
  };
});

describe("pg: pool specifics", () => {
  it("when the pool has a single connection, then transactions and migrations still complete", async () => {
    const database = await createTestDatabase();
    const db = createPgDb({ url: database.url, max: 1 });
    try {
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => db.transaction(async (tx) => (await tx.query<{ i: number }>("select $1::int4 as i", [i])).rows[0]?.i)),
      );
      expect(results).toEqual([0, 1, 2, 3, 4]);
      const dir = await mkdtemp(join(tmpdir(), "gw-pg-migrations-"));
      try {
        await writeFile(join(dir, "0001_create.sql"), "create table items (id int);");
        expect(await runMigrations(db, { schema: "solo", dir })).toEqual(["0001_create"]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    } finally {
      await db.close();
      await database.drop();
    }
  }, 60_000);

  it("when a statement timeout is set, then a longer statement fails with SQLSTATE 57014", async () => {
    const database = await createTestDatabase();
    const db = createPgDb({ url: database.url, statementTimeoutMs: 50 });
    try {
      await expect(db.query("select pg_sleep(1)")).rejects.toMatchObject({ code: "57014" });
    } finally {
      await db.close();
      await database.drop();
    }
  }, 60_000);

  it("when the server cannot be reached, then ping is false instead of throwing", async () => {
    const db = createPgDb({ url: "postgres://nobody@127.0.0.1:1/none", connectionTimeoutMs: 500 });
    try {
      expect(await db.ping()).toBe(false);
    } finally {
      await db.close();
    }
  });
});
