import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";

/** The data folder's secret files; `pnpm gw` reads the admin token's from the same place. */
export const secretFileNames = { adminToken: "admin-token", internalSecret: "internal-secret" } as const;

export const generateAdminToken = () => `gw_admin_${randomBytes(24).toString("base64url")}`;
export const generateInternalSecret = () => randomBytes(32).toString("base64url");

export interface KeptSecret {
  value: string;
  path: string;
  /** Made by this call (a first start), rather than read back. */
  created: boolean;
  /** The file was readable by others and has been made 0600 again. */
  tightened: boolean;
}

/** The data folder, made if missing; only its user may list it. */
export function ensureDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw dataDirError(dir, err);
  }
}

/** A file system failure in the data folder, said so the operator knows what to change. */
export function dataDirError(dir: string, err: unknown): Error {
  return new Error(
    `The data folder ${dir} cannot be used (${(err as Error).message}). Run the gateway as a user that may write there, or set GATEWAY_DATA_DIR to a folder it may write.`,
  );
}

/**
 * The secret kept in `dir/name`: read back if the file exists, else generated and written so that
 * it is never readable by anyone else, not even for a moment, and never half-written: the value
 * goes into a fresh 0600 file (O_EXCL) that is then linked into place, which fails rather than
 * replace a file another start linked first; that one's value is then used.
 */
export function keepSecret(dir: string, name: string, generate: () => string): KeptSecret {
  const path = join(dir, name);
  const existing = readSecret(path);
  if (existing) return { ...existing, path, created: false };
  ensureDataDir(dir);
  const value = generate();
  const temp = join(dir, `.${name}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  let fd: number;
  try {
    fd = openSync(temp, "wx", 0o600);
  } catch (err) {
    throw dataDirError(dir, err);
  }
  try {
    writeSync(fd, `${value}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const winner = readSecret(path);
    if (!winner) throw err;
    return { ...winner, path, created: false };
  } finally {
    unlinkSync(temp);
  }
  return { value, path, created: true, tightened: false };
}

function readSecret(path: string): { value: string; tightened: boolean } | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Error(`cannot read ${path}: ${(err as Error).message}`);
  }
  const value = text.trim();
  if (value.length < 16) {
    throw new Error(
      `${path} does not hold a secret of at least 16 characters; delete it to have a new one generated (clients using the old one must then be given the new one)`,
    );
  }
  // A copy (cp, an archive) may have widened the mode; the secret is still ours, so close it again.
  const tightened = (statSync(path).mode & 0o077) !== 0;
  if (tightened) {
    try {
      chmodSync(path, 0o600);
    } catch (err) {
      throw new Error(`${path} is readable by other users and cannot be made 0600 (${(err as Error).message}); fix its owner or mode`);
    }
  }
  return { value, tightened };
}

/** A secret as the gateway uses it: the operator's (never written, never shown) or one kept in the data folder. */
export type ResolvedSecret = { value: string; supplied: true } | ({ supplied: false } & KeptSecret);

export function suppliedOrKept(supplied: string | undefined, dir: string, name: string, generate: () => string): ResolvedSecret {
  return supplied ? { value: supplied, supplied: true } : { supplied: false, ...keepSecret(dir, name, generate) };
}
