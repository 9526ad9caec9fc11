import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const hook = fileURLToPath(new URL("./hook.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "hook-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A service that calls the next hop (its own second server, which answers after 30 ms) for /hop,
// answers /direct itself, and prints its port.
const service = `
const http = require("node:http");
const next = http.createServer((_q, r) => setTimeout(() => r.end("next"), 30)).listen(0, "127.0.0.1");
const front = http.createServer((q, r) => {
  if (q.url === "/direct") return r.end("self");
  http.get({ host: "127.0.0.1", port: next.address().port, path: "/" }, (a) => { a.resume(); a.on("end", () => r.end("relayed")); });
}).listen(0, "127.0.0.1", () => console.log(front.address().port));
`;

async function rows(pid: number, dump: number): Promise<number[][]> {
  process.kill(pid, "SIGUSR2");
  const file = join(dir, `bd-${pid}-${dump}.json`);
  for (let i = 0; i < 250 && !existsSync(file); i++) await sleep(20);
  return JSON.parse(readFileSync(file, "utf8")) as number[][];
}

describe("breakdown hook", () => {
  it("times each request's part before, during and after its call to the next hop, and skips requests without one", async () => {
    const child = spawn(process.execPath, ["--import", hook, "-e", service], {
      env: { ...process.env, BENCH_BREAKDOWN_PREFIX: join(dir, "bd-") },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const [line] = (await once(child.stdout, "data")) as [Buffer];
      const base = `http://127.0.0.1:${line.toString().trim()}`;
      await fetch(`${base}/hop`).then((r) => r.text());
      expect(await rows(child.pid!, 0)).toHaveLength(1); // the first dump takes what came before it

      for (const path of ["/hop", "/direct", "/hop", "/hop"]) expect((await fetch(`${base}${path}`)).status).toBe(200);
      const recorded = await rows(child.pid!, 1);
      expect(recorded).toHaveLength(3);
      for (const [before, wait, after] of recorded) {
        expect(before).toBeGreaterThanOrEqual(0);
        expect(after).toBeGreaterThanOrEqual(0);
        expect(wait).toBeGreaterThanOrEqual(25_000); // the next hop held its answer 30 ms
      }
    } finally {
      child.kill();
    }
  });
});
