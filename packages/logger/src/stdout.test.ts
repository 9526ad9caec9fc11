import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "@gw/testkit";

const dir = mkdtempSync(join(tmpdir(), "gw-logger-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
    const lines = () => out.split("\n").filter(Boolean);
    try {
      await until(() => lines().length >= 1, "the first line", 10_000);
      expect(JSON.parse(lines()[0] ?? "{}").msg).toBe("first");
      await until(() => lines().length >= 2, "the second line", 10_000);
      expect(lines().map((l) => JSON.parse(l))).toMatchObject([
        { service: "quiet", n: 1, msg: "first" },
        { service: "quiet", n: 2, msg: "second" },
      ]);
    } finally {
      proc.kill();
    }
  });
});
