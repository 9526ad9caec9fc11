import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMigrations } from "@gw/db";
import { consoleMigrations } from "../../services/console/src/service";
import { openPgliteFolder } from "../../services/embedded/src/data-folder";
import { ingressMigrations } from "../../services/ingress/src/service";
import { jobsMigrations } from "../../services/jobs/src/service";
import { usageMigrations } from "../../services/usage/src/service";

/** Each schema of the embedded default and its service's migrations; a start applies any missing here. */
const schemas = [
  { schema: "ingress", dir: ingressMigrations },
  { schema: "jobs", dir: jobsMigrations },
  { schema: "usage", dir: usageMigrations },
  { schema: "console", dir: consoleMigrations },
];

let template: Promise<string> | undefined;

/**
 * An empty database folder with every schema migrated, made once per test process and copied for
 * each embedded gateway: creating a PGlite cluster takes about 4 s, a copy about 0.1 s. A gateway's
 * very first start on a folder with nothing in it is test/e2e/data-folder.e2e.test.ts's to check.
 */
export function pgliteTemplate(): Promise<string> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-pglite-template-"));
    // About 40 MB, kept until the test process ends.
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const db = await openPgliteFolder(dir);
    for (const migrations of schemas) await runMigrations(db, migrations);
    await db.close();
    return join(dir, "pglite");
  })();
  return template;
}
