import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

export interface MigrationFile {
  /** File name without `.sql`, e.g. `0001_create_jobs`; this is what `schema_migrations` records. */
  name: string;
  path: string;
  sql: string;
}

const FILE_NAME = /^(\d{4})_[a-z0-9][a-z0-9_-]*\.sql$/;

/**
 * Reads `NNNN_name.sql` files in order. A `.sql` file with another name, or two files with the same
 * number (two branches merged), is an error rather than a silent skip or an ambiguous order.
 * Everything is read before anything runs, so an unreadable file cannot leave a half-applied set.
 */
export async function readMigrationFiles(dir: string): Promise<MigrationFile[]> {
  const entries = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  const seen = new Map<string, string>();
  const files: MigrationFile[] = [];
  for (const file of entries) {
    const number = FILE_NAME.exec(file)?.[1];
    if (number === undefined) {
      throw new Error(`migration file "${file}" in ${dir} is not named NNNN_lowercase_name.sql`);
    }
    const clash = seen.get(number);
    if (clash !== undefined) {
      throw new Error(`migration files "${clash}" and "${file}" in ${dir} share the number ${number}`);
    }
    seen.set(number, file);
    const path = join(dir, file);
    files.push({ name: file.slice(0, -".sql".length), path, sql: await readFile(path, "utf8") });
  }
  return files;
}
