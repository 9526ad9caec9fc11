import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import { dataDirError, ensureDataDir } from "./secret-file";

export const lockFileName = "gateway.lock";

/** What the lock file says about the gateway holding the folder. */
const Holder = z.object({
  pid: z.number().int().positive(),
  host: z.string(),
  started_at: z.string(),
  /** Linux: the boot it started in, and its start time in clock ticks since boot (tells a reused pid apart). */
  boot_id: z.string().optional(),
  proc_start: z.string().optional(),
  ports: z.object({ public: z.number(), admin: z.number() }).partial().optional(),
  url: z.string().optional(),
  admin_url: z.string().optional(),
  nonce: z.string(),
});
export type LockHolder = z.infer<typeof Holder>;

export class DataFolderInUseError extends Error {
  override readonly name = "DataFolderInUseError";
  constructor(
    message: string,
    readonly holder?: LockHolder,
  ) {
    super(message);
  }
}

export interface DataFolderLock {
  readonly path: string;
  /** The lock this start took over from a gateway that is gone, if any. */
  readonly tookOverFrom?: LockHolder;
  /** Adds where this gateway serves, for the message a second start shows. */
  update(details: { url?: string; admin_url?: string }): void;
  /** Removes the lock if it is still this process's; safe to call more than once. */
  release(): void;
}

export interface LockOptions {
  ports?: { public?: number; admin?: number };
  /** Tests stand in for another process's liveness; the default asks the kernel. */
  isAlive?: (holder: LockHolder) => boolean;
}

/**
 * An exclusive lock on a data folder: a file created only if absent (a hard link of a fully written
 * temporary file, so it never exists half-written), holding who holds it. Node has no flock; this
 * also tells a second start who holds the folder. A lock whose holder is gone (same host, process
 * not running) is taken over; on another host it cannot be checked, so it is refused.
 */
export function acquireDataFolderLock(dir: string, options: LockOptions = {}): DataFolderLock {
  ensureDataDir(dir);
  const path = join(dir, lockFileName);
  const isAlive = options.isAlive ?? holderAlive;
  const self: LockHolder = {
    pid: process.pid,
    host: hostname(),
    started_at: new Date().toISOString(),
    ...linuxProcessIdentity(process.pid),
    ports: options.ports,
    nonce: randomBytes(12).toString("hex"),
  };
  let tookOverFrom: LockHolder | undefined;
  for (let attempt = 0; ; attempt++) {
    if (attempt === 10) throw new DataFolderInUseError(`Could not take the lock ${path}: other starts keep changing it. Start one gateway at a time.`);
    const current = readLock(path);
    if (current === undefined) {
      if (createExclusive(path, self)) break;
      continue; // another start made it between our read and our link: judge that one
    }
    if (current === "unreadable") {
      throw new DataFolderInUseError(
        `The data folder ${dir} has a lock file (${path}) that cannot be read, so who holds it is unknown. ` +
          `If no gateway is running on this folder, delete that file and start again.`,
      );
    }
    if (current.host !== self.host || isAlive(current)) throw new DataFolderInUseError(inUseMessage(dir, path, current, self.host), current);
    // Gone: move its lock aside, and only remove it if it is still the stale one we judged.
    if (removeIfUnchanged(path, current)) tookOverFrom = current;
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    const now = readLock(path);
    if (typeof now === "object" && now.nonce === self.nonce) unlinkSync(path);
  };
  // A normal exit, process.exit after a failed start, or an uncaught error: the lock goes with us.
  process.once("exit", release);
  return {
    path,
    tookOverFrom,
    update(details) {
      if (!held) return;
      Object.assign(self, details);
      // Only makes a refusal's message more precise: a failure here must not stop the gateway.
      try {
        renameSync(writeTemp(path, self), path);
      } catch {
        // the lock still holds what it said at start
      }
    },
    release() {
      process.removeListener("exit", release);
      release();
    },
  };
}

function inUseMessage(dir: string, path: string, h: LockHolder, here: string): string {
  const serving = h.url
    ? `, serving ${h.url}${h.admin_url ? ` (admin ${h.admin_url})` : ""}`
    : h.ports
      ? `, ports ${h.ports.public ?? "?"}/${h.ports.admin ?? "?"}`
      : "";
  const elsewhere = h.host === here ? "" : ` That host cannot be checked from here; if that gateway is gone, delete ${path}.`;
  return (
    `The data folder ${dir} is in use by another gateway: pid ${h.pid} on host ${h.host}, started ${h.started_at}${serving}. ` +
    `Two gateways on one data folder lose each other's writes, so this one will not start. ` +
    `Stop the other one, or give this one its own GATEWAY_DATA_DIR.${elsewhere}`
  );
}

function readLock(path: string): LockHolder | "unreadable" | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return "unreadable";
  }
  try {
    const parsed = Holder.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : "unreadable";
  } catch {
    return "unreadable";
  }
}

function writeTemp(path: string, holder: LockHolder): string {
  const temp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(temp, "wx", 0o644);
  try {
    writeSync(fd, `${JSON.stringify(holder, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return temp;
}

/** True if this call created the lock file; false if one already existed. */
function createExclusive(path: string, holder: LockHolder): boolean {
  let temp: string;
  try {
    temp = writeTemp(path, holder);
  } catch (err) {
    throw dataDirError(dirname(path), err);
  }
  try {
    linkSync(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    unlinkSync(temp);
  }
}

/**
 * Removes a stale lock without the race of read-then-unlink (two starts both judging it stale, one
 * removing the other's fresh lock): rename is atomic, so exactly one start moves a given file; the
 * one that moved something else than the stale lock it judged puts it back.
 */
function removeIfUnchanged(path: string, judged: LockHolder): boolean {
  const aside = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.stale`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
  const moved = readLock(aside);
  if (typeof moved === "object" && moved.nonce === judged.nonce) {
    unlinkSync(aside);
    return true;
  }
  try {
    linkSync(aside, path);
  } catch {
    // yet another start has locked it meanwhile; that one holds the folder now
  }
  unlinkSync(aside);
  return false;
}

/** Whether the holder's process still runs: the pid exists and, on Linux, is the same process. */
export function holderAlive(holder: LockHolder): boolean {
  // A restarted container's gateway often has its predecessor's pid (1): the start time tells them apart.
  const here = linuxProcessIdentity(holder.pid);
  if (holder.boot_id && here.boot_id && holder.boot_id !== here.boot_id) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  return !(holder.proc_start && here.proc_start && holder.proc_start !== here.proc_start);
}

function linuxProcessIdentity(pid: number): { boot_id?: string; proc_start?: string } {
  try {
    const boot_id = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    let proc_start: string | undefined;
    try {
      // Field 22 of /proc/<pid>/stat; fields are counted after the command name, which may hold spaces.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      proc_start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    } catch {
      // no such process
    }
    return { boot_id, proc_start };
  } catch {
    return {};
  }
}
