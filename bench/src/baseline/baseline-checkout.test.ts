import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { baselineProcesses, describeBaseline, readBaselineCheckout, type GitRunner } from "./baseline-checkout";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A directory shaped like a checkout of this repository: the workspace file, four entry points, optionally tsx installed. */
function fakeCheckout(options: { installed: boolean; services?: string[] }): string {
  const dir = mkdtempSync(join(tmpdir(), "gw-bench-baseline-"));
  dirs.push(dir);
  writeFileSync(join(dir, "pnpm-workspace.yaml"), "packages: []\n");
  for (const name of options.services ?? ["inference", "tools", "jobs", "ingress"]) {
    mkdirSync(join(dir, "services", name, "src"), { recursive: true });
    writeFileSync(join(dir, "services", name, "src", "main.ts"), "");
  }
  if (options.installed) mkdirSync(join(dir, "node_modules", "tsx"), { recursive: true });
  return dir;
}

const git =
  (answers: Record<string, string | undefined>): GitRunner =>
  (_dir, args) =>
    answers[args.join(" ")];

describe("readBaselineCheckout", () => {
  it("when the directory is an installed checkout, then its commit and whether it has changes are read with git -C", () => {
    const dir = fakeCheckout({ installed: true });
    const seen: string[] = [];
    const runner: GitRunner = (at, args) => {
      seen.push(at);
      return git({ "rev-parse --short HEAD": "abc1234", "status --porcelain": " M x.ts" })(at, args);
    };
    expect(readBaselineCheckout(dir, runner)).toEqual({ dir, commit: "abc1234", dirty: true });
    expect(new Set(seen)).toEqual(new Set([dir]));
    expect(readBaselineCheckout(dir, git({ "rev-parse --short HEAD": "abc1234", "status --porcelain": "" })).dirty).toBe(false);
    expect(readBaselineCheckout(dir, git({})).commit).toBe("unknown");
  });

  it("when the path is relative, then it is made absolute", () => {
    const dir = fakeCheckout({ installed: true });
    expect(readBaselineCheckout(relative(process.cwd(), dir), git({})).dir).toBe(dir);
  });

  it("when the directory is missing, not this repository, or not installed, then the error says which and how to fix it", () => {
    expect(() => readBaselineCheckout("/nonexistent/gw-base", git({}))).toThrow(
      /--baseline: \/nonexistent\/gw-base is not a directory \(make one: git worktree add/,
    );
    const partial = fakeCheckout({ installed: true, services: ["inference", "tools", "ingress"] });
    expect(() => readBaselineCheckout(partial, git({}))).toThrow(`not a checkout of this repository (missing ${join("services", "jobs", "src", "main.ts")})`);
    const bare = fakeCheckout({ installed: false });
    expect(() => readBaselineCheckout(bare, git({}))).toThrow(/is not installed: run pnpm install --frozen-lockfile there/);
  });
});

describe("describeBaseline and baselineProcesses", () => {
  it("when printed, then the header line names commit, changes and place; the pids get their own names", () => {
    expect(describeBaseline({ dir: "/tmp/gw-base", commit: "abc1234", dirty: false })).toBe("baseline abc1234 at /tmp/gw-base");
    expect(describeBaseline({ dir: "/tmp/gw-base", commit: "abc1234", dirty: true })).toBe("baseline abc1234 (with uncommitted changes) at /tmp/gw-base");
    expect(baselineProcesses({ ingress: 10, inference: 11 })).toEqual({ "baseline:ingress": 10, "baseline:inference": 11 });
  });
});
