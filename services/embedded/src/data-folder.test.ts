import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DataFolderError, openPgliteFolder } from "./data-folder";

const freshDir = () => mkdtempSync(join(tmpdir(), "gw-folder-"));
const snapshot = (dir: string) => readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();

describe("opening the data folder's database", () => {
  it("when the database folder holds files but no database, then it refuses naming the folder and the fix, and changes nothing", async () => {
    const data = freshDir();
    const pglite = join(data, "pglite");
    mkdirSync(pglite);
    writeFileSync(join(pglite, "notes.txt"), "not a database");
    const error = await openPgliteFolder(data).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(DataFolderError);
    expect((error as Error).message).toContain(`The database folder ${pglite} is not empty but holds no database`);
    expect((error as Error).message).toContain(`mv ${pglite}`);
    expect(snapshot(pglite)).toEqual(["notes.txt"]);
    expect(readFileSync(join(pglite, "notes.txt"), "utf8")).toBe("not a database");
  });

  it("when the database folder may not be read and written, then it says so and how to fix it", async () => {
    const data = freshDir();
    const pglite = join(data, "pglite");
    mkdirSync(pglite);
    writeFileSync(join(pglite, "PG_VERSION"), "18\n");
    chmodSync(pglite, 0o000);
    try {
      const error = await openPgliteFolder(data).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(DataFolderError);
      expect((error as Error).message).toMatch(new RegExp(`${pglite} cannot be read and written by this user.*chmod -R u\\+rwX`));
    } finally {
      chmodSync(pglite, 0o700);
    }
    expect(snapshot(pglite)).toEqual(["PG_VERSION"]);
  });

  it("when the database was made by another Postgres version, then it names both versions and changes nothing", async () => {
    const data = freshDir();
    const pglite = join(data, "pglite");
    mkdirSync(pglite);
    writeFileSync(join(pglite, "PG_VERSION"), "99\n");
    mkdirSync(join(pglite, "global"));
    writeFileSync(join(pglite, "global", "pg_control"), Buffer.alloc(8192, 7));
    const error = await openPgliteFolder(data).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(DataFolderError);
    expect((error as Error).message).toMatch(/was made by Postgres 99, but this gateway's embedded database is Postgres \d+/);
    expect(snapshot(pglite)).toEqual(["PG_VERSION", "global", join("global", "pg_control")]);
  });
});
