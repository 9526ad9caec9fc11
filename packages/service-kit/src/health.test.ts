import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import express from "express";
import { repoRoot } from "@gw/config";
import { afterEach, describe, expect, it } from "vitest";
import { Health } from "./health";
import { createMetrics } from "./metrics";
import { startHttpServer, type RunningServer } from "./server";

const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close(100)));
});

async function serve(health: Health): Promise<string> {
  const app = express();
  health.mount(app);
  const server = await startHttpServer(app, 0, "127.0.0.1");
  running.push(server);
  return server.url;
}

interface ReadyBody {
  status: string;
  checks: Record<string, boolean>;
}

describe("Health.readiness", () => {
  it("when every check passes and the service is not draining, then it is ready", async () => {
    const health = new Health();
    health.addCheck("postgres", async () => true);
    health.addCheck("nats", async () => true);
    expect(await health.readiness(100)).toEqual({ ready: true, checks: { postgres: true, nats: true, draining: false } });
  });

  it("when a check resolves false, then it is not ready and names that check", async () => {
    const health = new Health();
    health.addCheck("postgres", async () => true);
    health.addCheck("nats", async () => false);
    const result = await health.readiness(100);
    expect(result.ready).toBe(false);
    expect(result.checks).toMatchObject({ postgres: true, nats: false });
  });

  it("when a check rejects, then it counts as failed instead of throwing", async () => {
    const health = new Health();
    health.addCheck("redis", () => Promise.reject(new Error("ECONNREFUSED")));
    const result = await health.readiness(100);
    expect(result).toMatchObject({ ready: false, checks: { redis: false } });
  });

  it("when a check throws synchronously, then it counts as failed instead of rejecting readiness", async () => {
    const health = new Health();
    health.addCheck("bus", () => {
      throw new Error("connection closed");
    });
    health.addCheck("postgres", async () => true);
    await expect(health.readiness(100)).resolves.toMatchObject({ ready: false, checks: { bus: false, postgres: true } });
  });

  it("when a check hangs past the timeout, then it counts as failed and readiness answers in about the timeout", async () => {
    const health = new Health();
    health.addCheck("slow", () => new Promise<boolean>(() => {}));
    health.addCheck("fast", async () => true);
    const started = Date.now();
    const result = await health.readiness(50);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(result).toMatchObject({ ready: false, checks: { slow: false, fast: true } });
  });

  it("when there are several checks, then they run in parallel (all are under way at once)", async () => {
    const health = new Health();
    let running = 0;
    let peak = 0;
    for (const name of ["a", "b", "c", "d"]) {
      health.addCheck(name, async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return true;
      });
    }
    const result = await health.readiness(1_000);
    expect(result.ready).toBe(true);
    expect(peak).toBe(4);
  });

  it("when draining has started, then it is not ready even though every check passes", async () => {
    const health = new Health();
    health.addCheck("postgres", async () => true);
    health.startDraining();
    expect(await health.readiness(100)).toEqual({ ready: false, checks: { postgres: true, draining: true } });
  });
});

describe("Health.readiness under a flood", () => {
  it("when a hundred readiness calls overlap, then the dependency checks run once, and a call a second later checks again", async () => {
    let now = 0;
    const health = new Health({ now: () => now });
    let runs = 0;
    health.addCheck("postgres", async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 5));
      return true;
    });
    const answers = await Promise.all(Array.from({ length: 100 }, () => health.readiness(100)));
    expect(answers.every((a) => a.ready)).toBe(true);
    expect(runs).toBe(1);
    now += 500;
    await health.readiness(100);
    expect(runs).toBe(1);
    now += 1_001;
    await health.readiness(100);
    expect(runs).toBe(2);
  });
});

describe("Health over HTTP", () => {
  it("when all is well, then /livez and /readyz answer 200", async () => {
    const health = new Health();
    health.addCheck("postgres", async () => true);
    const url = await serve(health);
    const live = await fetch(`${url}/livez`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as ReadyBody).status).toBe("ok");
  });

  it("when /readyz answers, then it names the release and the commit that answer, as the metrics do", async () => {
    const health = new Health();
    const ready = (await (await fetch(`${await serve(health)}/readyz`)).json()) as ReadyBody & { version: string; commit: string };
    const root = JSON.parse(readFileSync(join(repoRoot(), "package.json"), "utf8")) as { version: string };
    const head = execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: repoRoot() }).toString().trim();
    expect([ready.version, ready.commit]).toEqual([root.version, head]);
    const metrics = await createMetrics("t", { defaults: false }).registry.metrics();
    expect(metrics).toContain(`gw_build_info{version="${root.version}",commit="${head}",service="t"} 1`);
  });

  it("when a check fails, then /readyz answers 503 naming it, while /livez stays 200", async () => {
    const health = new Health();
    health.addCheck("postgres", async () => false);
    const url = await serve(health);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as ReadyBody;
    expect(body.status).toBe("unavailable");
    expect(body.checks.postgres).toBe(false);
    expect((await fetch(`${url}/livez`)).status).toBe(200);
  });

  it("when a check never answers, then /readyz still answers 503 (bounded by the default timeout)", async () => {
    const health = new Health();
    health.addCheck("nats", () => new Promise<boolean>(() => {}));
    const url = await serve(health);
    const started = Date.now();
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as ReadyBody).checks.nats).toBe(false);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("when the service starts draining, then /readyz turns from 200 to 503", async () => {
    const health = new Health();
    health.addCheck("postgres", async () => true);
    const url = await serve(health);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    health.startDraining();
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as ReadyBody).checks.draining).toBe(true);
  });
});
