import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "gw-logger-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Polls `read` until it holds `count` lines or the deadline passes. */
async function lines(read: () => string, count: number, deadlineMs: number): Promise<string[]> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const got = read().split("\n").filter(Boolean);
    if (got.length >= count || Date.now() > until) return got;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("createLogger writing to stdout", () => {
  it("when a process stays up and goes quiet, then each line it buffered is written within a few seconds", async () => {
    // A child that logs one line, then a second once the first has had time to go out, and stays
    // up without logging: far below the 4 KiB batch, so only the timed flush can write them.
    const child = join(dir, "quiet.ts");
    writeFileSync(
      child,
      `import { createLogger } from ${JSON.stringify(fileURLToPath(new URL("./index.ts", import.meta.url)))};
const logger = createLogger({ service: "quiet", pretty: false });
logger.warn({ n: 1 }, "first");
setTimeout(() => logger.warn({ n: 2 }, "second"), 1_500);
setInterval(() => {}, 60_000);
`,
    );
    const proc = spawn(process.execPath, ["--import", "tsx", child], {
      stdio: ["ignore", "pipe", "inherit"],
      cwd: fileURLToPath(new URL("../../..", import.meta.url)),
    });
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    try {
      const first = await lines(() => out, 1, 10_000);
      expect(JSON.parse(first[0] ?? "{}").msg).toBe("first");
      const both = await lines(() => out, 2, 10_000);
      expect(both.map((l) => JSON.parse(l))).toMatchObject([
        { service: "quiet", n: 1, msg: "first" },
        { service: "quiet", n: 2, msg: "second" },
      ]);
    } finally {
      proc.kill();
    }
  });
});
