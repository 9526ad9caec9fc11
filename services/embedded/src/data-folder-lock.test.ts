import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireDataFolderLock, DataFolderInUseError, lockFileName } from "./data-folder-lock";

const freshDir = () => mkdtempSync(join(tmpdir(), "gw-lock-"));

/** The pid of a process that has exited (the kernel does not hand it out again this soon). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

describe("the data folder lock", () => {
  it("when a gateway holds the folder, then a second one is refused with the holder's pid, host, start time and URL", () => {
    const dir = freshDir();
    const first = acquireDataFolderLock(dir, { ports: { public: 8080, admin: 8090 } });
    first.update({ url: "http://127.0.0.1:8080", admin_url: "http://127.0.0.1:8090" });
    let refused: unknown;
    try {
      acquireDataFolderLock(dir);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(DataFolderInUseError);
    const message = (refused as Error).message;
    expect(message).toContain(`pid ${process.pid} on host ${hostname()}`);
    expect(message).toContain("serving http://127.0.0.1:8080 (admin http://127.0.0.1:8090)");
    expect(message).toMatch(/started \d{4}-\d\d-\d\dT/);
    expect(message).toContain("GATEWAY_DATA_DIR");
    // The refused start left the folder as it was.
    expect(readdirSync(dir)).toEqual([lockFileName]);
    first.release();
  });

  it("when the holder releases the folder, then the lock file is gone and the next start takes it", () => {
    const dir = freshDir();
    const first = acquireDataFolderLock(dir);
    first.release();
    first.release();
    expect(existsSync(join(dir, lockFileName))).toBe(false);
    const second = acquireDataFolderLock(dir);
    expect(second.tookOverFrom).toBeUndefined();
    second.release();
  });

  it("when the lock's holder is no longer running on this host, then it is taken over and the previous holder reported", () => {
    const dir = freshDir();
    const pid = deadPid();
    const stale = { pid, host: hostname(), started_at: "2020-01-01T00:00:00.000Z", nonce: "old" };
    writeFileSync(join(dir, lockFileName), JSON.stringify(stale));
    const lock = acquireDataFolderLock(dir);
    expect(lock.tookOverFrom).toMatchObject({ pid, started_at: stale.started_at });
    expect(JSON.parse(readFileSync(lock.path, "utf8"))).toMatchObject({ pid: process.pid });
    expect(readdirSync(dir)).toEqual([lockFileName]);
    lock.release();
  });

  it("when the lock's pid is running but is another process than the one that locked (a reused pid), then it is taken over", () => {
    const dir = freshDir();
    const reused = { pid: process.pid, host: hostname(), started_at: "2020-01-01T00:00:00.000Z", boot_id: "b", proc_start: "1", nonce: "old" };
    writeFileSync(join(dir, lockFileName), JSON.stringify({ ...reused, boot_id: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() }));
    const lock = acquireDataFolderLock(dir);
    expect(lock.tookOverFrom?.pid).toBe(process.pid);
    lock.release();
  });

  it("when the holder is on another host, then it is not taken over even if that pid is free here", () => {
    const dir = freshDir();
    writeFileSync(join(dir, lockFileName), JSON.stringify({ pid: deadPid(), host: "elsewhere", started_at: "2020-01-01T00:00:00.000Z", nonce: "x" }));
    expect(() => acquireDataFolderLock(dir)).toThrow(/on host elsewhere.*delete .*gateway\.lock/);
  });

  it("when the lock file cannot be understood, then the start is refused rather than guessing", () => {
    const dir = freshDir();
    writeFileSync(join(dir, lockFileName), "garbage");
    expect(() => acquireDataFolderLock(dir)).toThrow(/cannot be read.*delete that file/);
    expect(readFileSync(join(dir, lockFileName), "utf8")).toBe("garbage");
  });
});
