import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { installedPortkeyVersion, portkeyEntry, portkeyHeaders, startPortkey } from "./start-portkey";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A prefix that looks like a finished install of `version`, with `server` as Portkey's entry file. */
function fakeInstall(version: string, server?: string): string {
  const dir = mkdtempSync(join(tmpdir(), "bench-portkey-"));
  dirs.push(dir);
  writeFileSync(join(dir, "installed.json"), JSON.stringify({ version }));
  if (server !== undefined) {
    mkdirSync(dirname(portkeyEntry(dir)), { recursive: true });
    writeFileSync(portkeyEntry(dir), server);
  }
  return dir;
}

/** Answers GET / like Portkey, on --port=N, listening on the port alone as Portkey does. */
const fakeServer = `
import { createServer } from "node:http";
const port = Number(process.argv.find((a) => a.startsWith("--port=")).slice(7));
createServer((req, res) => res.end("AI Gateway says hey!")).listen(port, () => console.log("ready"));
`;

describe("portkeyHeaders", () => {
  it("routes to the upstream as an OpenAI custom host, with the upstream key as the provider key", () => {
    expect(portkeyHeaders("http://127.0.0.1:4000/v1", "sk-up")).toEqual({
      "x-portkey-provider": "openai",
      "x-portkey-custom-host": "http://127.0.0.1:4000/v1",
      authorization: "Bearer sk-up",
    });
  });
});

describe("installedPortkeyVersion", () => {
  it("reads the version of a finished install only", () => {
    expect(installedPortkeyVersion(join(tmpdir(), "bench-portkey-nowhere"))).toBeUndefined();
    expect(installedPortkeyVersion(fakeInstall("1.15.2"))).toBeUndefined(); // marker, but no files
    expect(installedPortkeyVersion(fakeInstall("1.15.2", "// entry"))).toBe("1.15.2");
  });
});

describe("the preload", () => {
  it("moves a listen() without a host onto 127.0.0.1 and makes SIGTERM a clean exit", () => {
    const preload = fileURLToPath(new URL("./portkey-preload.mjs", import.meta.url));
    const script = `
      const srv = require("node:net").createServer().listen(0, () => {
        console.log(srv.address().address);
        process.kill(process.pid, "SIGTERM");
        setTimeout(() => process.exit(3), 5000);
      });`;
    const run = spawnSync(process.execPath, ["--import", preload, "-e", script], { encoding: "utf8", timeout: 10_000 });
    expect(run.stdout.trim()).toBe("127.0.0.1");
    expect(run.status).toBe(0);
  });
});

describe("startPortkey", () => {
  it("starts an installed version without npm, waits until it answers, and stops it with exit code 0", async () => {
    const portkey = await startPortkey({
      dir: fakeInstall("9.9.9", fakeServer),
      version: "9.9.9",
      upstreamURL: "http://127.0.0.1:4000/v1",
      upstreamKey: "sk-up",
    });
    try {
      expect(portkey.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(portkey.pid).not.toBe(process.pid);
      expect(portkey.headers["x-portkey-custom-host"]).toBe("http://127.0.0.1:4000/v1");
      expect(portkey.command).toContain("--headless");
      expect(await (await fetch(new URL("/", portkey.baseURL))).text()).toBe("AI Gateway says hey!");
    } finally {
      expect(await portkey.stop()).toBe(0);
    }
    expect(await portkey.stop()).toBe(0); // a second stop just reports
  });

  it("fails with the process's output when it exits before answering", async () => {
    const dir = fakeInstall("9.9.9", `console.error("no such provider"); process.exit(4);`);
    await expect(startPortkey({ dir, version: "9.9.9", upstreamURL: "http://127.0.0.1:4000/v1", upstreamKey: "k" })).rejects.toThrow(
      /exited before answering[\s\S]*no such provider/,
    );
  });
});
