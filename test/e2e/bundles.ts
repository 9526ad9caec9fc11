import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildServices, type BuiltFile, repositoryRoot } from "../../scripts/build";

/**
 * The services' bundles (`pnpm build`, what the images run) for the end-to-end tests' meshes, built
 * once and again only when what they are built from has changed. A mesh started from its bundles
 * costs a third of the CPU of one started through tsx (2.5 against 7.6 s on a 2-vCPU machine), and
 * the suite starts dozens. Test files run in parallel workers, so the check and the build happen
 * under a lock (a directory, which only one process can create), and nothing rebuilds the bundles
 * while a mesh may be starting from them.
 */
const root = repositoryRoot;
const cache = join(root, "node_modules", ".cache", "gw-test-bundles");
const stampFile = join(cache, "stamp.json");
const lockDir = join(cache, "lock");
/** What the bundles are made of: sources, the build script, the dependencies installed. */
const inputs = ["services", "packages", "scripts", "package.json", "pnpm-lock.yaml"];
const skipped = new Set(["node_modules", "dist", ".data", join(root, "services", "console", "web")]);

interface Stamp {
  fingerprint: string;
  built: BuiltFile[];
}

/** The bundles, fresh; what the last build wrote. */
export async function ensureBundles(): Promise<BuiltFile[]> {
  mkdirSync(cache, { recursive: true });
  return withLock(async () => {
    const fingerprint = fingerprintOf();
    const stamp = readStamp();
    if (stamp?.fingerprint === fingerprint && stamp.built.every((f) => existsSync(join(root, f.file)))) return stamp.built;
    const built = await buildServices();
    writeFileSync(stampFile, JSON.stringify({ fingerprint, built } satisfies Stamp));
    return built;
  });
}

function readStamp(): Stamp | undefined {
  try {
    return JSON.parse(readFileSync(stampFile, "utf8")) as Stamp;
  } catch {
    return undefined;
  }
}

/** Files, bytes and the latest change under the inputs, and the commit (which the bundles carry). */
function fingerprintOf(): string {
  let files = 0;
  let bytes = 0;
  let latest = 0;
  const walk = (path: string) => {
    if (skipped.has(path)) return;
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return;
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path)) if (!skipped.has(entry)) walk(join(path, entry));
      return;
    }
    // The tests are not bundled: editing one is no reason to build again.
    if (path.endsWith(".test.ts")) return;
    files += 1;
    bytes += stat.size;
    latest = Math.max(latest, stat.mtimeMs);
  };
  for (const input of inputs) walk(join(root, input));
  let commit = "";
  try {
    commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
  } catch {
    // Not a git checkout: the sources alone say when to rebuild.
  }
  return `${files}:${bytes}:${latest}:${commit}`;
}

async function withLock<T>(work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      if (ownerGone()) rmSync(lockDir, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`the test bundles' lock (${lockDir}) was held for 3 minutes`);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  writeFileSync(join(lockDir, "pid"), String(process.pid));
  try {
    return await work();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/** A lock whose process has died (a test run killed mid-build) is taken over. */
function ownerGone(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lockDir, "pid"), "utf8"));
  } catch {
    // Just made, its pid not yet written: give it time, unless it has been so for a while.
    const made = statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    return Date.now() - made > 10_000;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}
