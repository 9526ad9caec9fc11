import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The patches that take the ledger off a checkout for `--baseline` runs (bench/README.md) must still
 * apply to this tree: one that has drifted fails only when somebody needs it.
 */
describe.each(["ledger-off.patch", "ledger-records-off.patch"])("bench/%s", (name) => {
  const patch = `${root}bench/${name}`;

  it("when checked against this tree, then it applies cleanly", () => {
    // Throws with git's own message (the file and hunk that no longer match) when it does not.
    expect(() => execFileSync("git", ["apply", "--check", patch], { cwd: root, stdio: "pipe" })).not.toThrow();
  });

  it("when read, then it takes off the ingress recorder and touches nothing outside services", () => {
    const text = readFileSync(patch, "utf8");
    const files = [...text.matchAll(/^\+\+\+ b\/(\S+)$/gm)].map((m) => m[1]);
    expect(files).toContain("services/ingress/src/public-app.ts");
    expect(files.every((f) => f?.startsWith("services/"))).toBe(true);
    expect(text).toContain("-  const recordUsage = usageRecorder(deps.usage);");
  });
});
