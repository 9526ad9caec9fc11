import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * How the config hands the run's folder to the global setup (both run in vitest's main process),
 * as "<pid> <folder>": vitest evaluates the config once per project, and all must name one folder,
 * while a run started from within a test (another pid) gets its own.
 */
const TEMP_ROOT_ENV = "GW_TEST_TEMP_ROOT";

function ownRoot(env: NodeJS.ProcessEnv): string | undefined {
  const value = env[TEMP_ROOT_ENV] ?? "";
  const space = value.indexOf(" ");
  // The folder is all after the first space: a TMPDIR may hold spaces of its own.
  return space > 0 && value.slice(0, space) === String(process.pid) ? value.slice(space + 1) : undefined;
}

/**
 * The run's temporary folder, named when vitest loads its config: the config gives it to every test
 * worker as TMPDIR, so `tmpdir()` there (and in each process a test starts with its environment)
 * resolves inside it. A run started from within a test nests its folder in the outer one's.
 */
export function nameTempRoot(env: NodeJS.ProcessEnv = process.env): string {
  const named = ownRoot(env);
  if (named) return named;
  const root = join(tmpdir(), `gw-test-run-${randomBytes(6).toString("hex")}`);
  env[TEMP_ROOT_ENV] = `${process.pid} ${root}`;
  return root;
}

/**
 * Vitest's global setup: makes the run's folder, and removes it with all it holds when the run ends.
 * Tests remove what they make, but a gateway killed with -9, a failed test or a test that forgot
 * cannot, and what they leave (PGlite folders of 40 MB each) would stay in the machine's /tmp for
 * good. Each project runs it; making and removing the folder twice is harmless.
 * Vitest passes its project as the first argument, so the environment is read here, not taken.
 */
export function setup(): () => void {
  return makeTempRoot(process.env);
}

/** Makes the folder nameTempRoot named in `env`; the function returned removes it. */
export function makeTempRoot(env: NodeJS.ProcessEnv): () => void {
  const root = ownRoot(env);
  if (!root) throw new Error(`${TEMP_ROOT_ENV} is not set by this process: vitest.config.ts names the run's temporary folder`);
  mkdirSync(root, { recursive: true });
  return () => rmSync(root, { recursive: true, force: true });
}
