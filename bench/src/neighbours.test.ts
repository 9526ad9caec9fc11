import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cpuUsers, neighbourNote, readProcessTable, type ProcessTable } from "./neighbours";

// A real line's shape: ppid (field 4) = 77, utime/stime (fields 14/15) = 250/50.
const line = (pid: number, comm: string, ppid = 77, utime = 250, stime = 50) =>
  `${pid} (${comm}) S ${ppid} 4242 4242 0 -1 4194560 100 0 0 0 ${utime} ${stime} 0 0 20 0 11 0 777 1234567 12345 18446744073709551615 1 1 0 0 0 0`;

const table = (rows: Array<[pid: number, name: string, ppid: number, ticks: number]>): ProcessTable =>
  new Map(rows.map(([pid, name, ppid, cpuTicks]) => [pid, { name, ppid, cpuTicks }]));

describe("readProcessTable", () => {
  it("reads every numbered entry of a proc folder and skips the rest, and any it cannot read", () => {
    const root = mkdtempSync(join(tmpdir(), "proc-"));
    for (const [pid, comm] of [
      [10, "redis-server"],
      [11, "beam.smp"],
    ] as const) {
      mkdirSync(join(root, String(pid)));
      writeFileSync(join(root, String(pid), "stat"), line(pid, comm));
    }
    mkdirSync(join(root, "self"));
    mkdirSync(join(root, "12")); // ended: no stat file
    mkdirSync(join(root, "13"));
    writeFileSync(join(root, "13", "stat"), "not a stat line");
    const read = readProcessTable(root);
    expect([...read.keys()].sort()).toEqual([10, 11]);
    expect(read.get(11)).toMatchObject({ name: "beam.smp", ppid: 77, cpuTicks: 300 });
  });

  it("finds this process and its children on a live /proc", async () => {
    if (process.platform !== "linux") return;
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 5000)"]);
    try {
      await new Promise((resolve) => child.once("spawn", resolve));
      const live = readProcessTable();
      expect(live.get(child.pid!)?.ppid).toBe(process.pid);
      expect(live.has(process.pid)).toBe(true);
    } finally {
      child.kill();
    }
  });
});

describe("cpuUsers", () => {
  const self = 100;
  // 100 ticks a second; the interval is 2 s, so 20 ticks = 10 % of a core.
  const before = table([
    [1, "init", 0, 5],
    [100, "node", 1, 1000],
    [101, "node", 100, 500], // a service the bench started
    [102, "node", 101, 10], // a grandchild (e.g. Portkey's worker)
    [200, "beam.smp", 1, 4000],
    [300, "redis-server", 1, 700],
    [400, "sshd", 1, 50],
    [41, "kworker/1:1-virtio_vsock", 2, 100],
  ]);
  const after = table([
    [1, "init", 0, 5],
    [100, "node", 1, 1300],
    [101, "node", 100, 900],
    [102, "node", 101, 400],
    [200, "beam.smp", 1, 4020],
    [300, "redis-server", 1, 780],
    [400, "sshd", 1, 51],
    [500, "cc1", 1, 30], // started during the interval
    [41, "kworker/1:1-virtio_vsock", 2, 112],
  ]);

  it("counts what others used, leaves out the benchmark and its descendants, and sets the mesh's servers and kernel threads apart", () => {
    const report = cpuUsers(before, after, 2_000, self, 0.02, 100);
    expect(report.neighbours).toEqual([
      { pid: 500, name: "cc1", core: 0.15 },
      { pid: 200, name: "beam.smp", core: 0.1 },
    ]);
    expect(report.infrastructure).toEqual([{ pid: 300, name: "redis-server", core: 0.4 }]);
    expect(report.kernel).toEqual([{ pid: 41, name: "kworker/1:1-virtio_vsock", core: 0.06 }]);
  });

  it("when a pid was reused by another program, then the new program's whole time counts", () => {
    const reused = new Map(after).set(400, { name: "make", ppid: 1, cpuTicks: 16 });
    expect(cpuUsers(before, reused, 2_000, self, 0.02, 100).neighbours).toContainEqual({ pid: 400, name: "make", core: 0.08 });
  });

  it("notes neighbours only when together they pass the threshold", () => {
    const report = cpuUsers(before, after, 2_000, self, 0.02, 100);
    expect(neighbourNote("capacity", report)).toBe(
      "note: during capacity, other processes used 25.0 % of a core (cc1 (pid 500) 15.0 %, beam.smp (pid 200) 10.0 %); tails may be skewed",
    );
    expect(neighbourNote("capacity", report, 0.3)).toBeUndefined();
    expect(neighbourNote("capacity", cpuUsers(before, before, 2_000, self, 0.02, 100))).toBeUndefined();
  });
});
