import { constants, accessSync, readdirSync, readFileSync, statSync, type Stats } from "node:fs";
import { join } from "node:path";
import { createPgliteDb, type Db } from "@gw/db";

/** The data folder's database cannot be opened: the message names the folder, the cause and the fix. */
export class DataFolderError extends Error {
  override readonly name = "DataFolderError";
}

const untouched = "Nothing in it was changed.";

/**
 * Opens the PGlite database in `dataDir/pglite`, or explains why not. It never starts an empty
 * database over something it cannot read: PGlite would run initdb into any folder that lacks
 * PG_VERSION, and only says "failed to initialize properly" for one it cannot open.
 */
export async function openPgliteFolder(dataDir: string): Promise<Db> {
  const dir = join(dataDir, "pglite");
  checkBeforeOpen(dir);
  try {
    return await createPgliteDb({ dataDir: dir });
  } catch (err) {
    throw await explainOpenFailure(dir, err);
  }
}

function checkBeforeOpen(dir: string): void {
  let stat: Stats;
  try {
    stat = statSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return; // a first start: PGlite makes it
    throw new DataFolderError(`The database folder ${dir} cannot be looked at (${code ?? (err as Error).message}). ${permissionsFix(dir)}`);
  }
  if (!stat.isDirectory()) {
    throw new DataFolderError(
      `${dir} should be the gateway's database folder but is a file. Move it aside (or set GATEWAY_DATA_DIR to another folder) and start again. ${untouched}`,
    );
  }
  let accessible = (stat.mode & 0o700) === 0o700;
  try {
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch {
    accessible = false;
  }
  if (!accessible)
    throw new DataFolderError(`The database folder ${dir} cannot be read and written by this user (uid ${process.getuid?.() ?? "?"}). ${permissionsFix(dir)}`);
  const entries = readdirSync(dir);
  if (entries.length > 0 && !entries.includes("PG_VERSION")) {
    throw new DataFolderError(
      `The database folder ${dir} is not empty but holds no database (no PG_VERSION file): it may be an unfinished first start, or files put there by hand. ` +
        `Move it aside (mv ${dir} ${dir}.aside) and start again to get an empty database. ${untouched}`,
    );
  }
}

async function explainOpenFailure(dir: string, err: unknown): Promise<DataFolderError> {
  const cause = describeCause(err);
  const version = readVersion(dir);
  const expected = version ? await embeddedMajorVersion() : undefined;
  if (version && expected && version !== expected) {
    return new DataFolderError(
      `The database in ${dir} was made by Postgres ${version}, but this gateway's embedded database is Postgres ${expected} (${cause}). ` +
        `Open it with the gateway version that made it to export its data, or move it aside (mv ${dir} ${dir}.pg${version}) to start with an empty one. ${untouched}`,
    );
  }
  if (errnoOf(err) === wasiEacces || /EACCES|EPERM|permission denied/i.test(cause)) {
    return new DataFolderError(`The database in ${dir} could not be opened: a file in it could not be read or written (${cause}). ${permissionsFix(dir)}`);
  }
  const stamp = new Date().toISOString().slice(0, 19).replace(/[-:]/g, "");
  return new DataFolderError(
    `The database in ${dir} could not be opened (${cause}): it looks damaged (a crash or a copy taken while a gateway was writing it) or was made by a newer gateway. ` +
      `Move it aside (mv ${dir} ${dir}.broken-${stamp}) and start again to get an empty database, then restore your data into it if you have a dump; keep the moved folder for recovery. ${untouched}`,
  );
}

function permissionsFix(dir: string): string {
  return `Run the gateway as the user that owns it, or give that user access (chown -R "$(id -u)" ${dir}; chmod -R u+rwX ${dir}). ${untouched}`;
}

function readVersion(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, "PG_VERSION"), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** PGlite's file system errors (emscripten's ErrnoError) carry only an errno, in WASI numbering. */
const wasiEacces = 2;
const errnoOf = (err: unknown): unknown => (err as { errno?: unknown } | null)?.errno;

function describeCause(err: unknown): string {
  if (err instanceof Error && err.message) return err.message;
  const errno = errnoOf(err);
  if (typeof errno === "number") return `file system error, errno ${errno}${errno === wasiEacces ? " (permission denied)" : ""}`;
  return String(err);
}

/** The Postgres major version this PGlite makes, asked of a throwaway in-memory instance (failure path only). */
async function embeddedMajorVersion(): Promise<string | undefined> {
  try {
    const db = await createPgliteDb();
    try {
      const { rows } = await db.query<{ server_version_num: string }>("show server_version_num");
      const num = Number(rows[0]?.server_version_num);
      return Number.isFinite(num) ? String(Math.floor(num / 10_000)) : undefined;
    } finally {
      await db.close();
    }
  } catch {
    return undefined;
  }
}
