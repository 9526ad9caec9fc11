import express from "express";
import { createLogger } from "@gw/logger";
import { createMetrics, createServiceApp, finishApp, startHttpServer, type RunningServer } from "@gw/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleProxy } from "./console-proxy";

/** `/console/*` through ingress: headers cleaned and the address passed on; failed sign-ins capped per address. */
let consoleServer: RunningServer;
let ingress: RunningServer;
let now = 1_000_000;
const seen: { path: string; headers: Record<string, unknown> }[] = [];

beforeAll(async () => {
  const stub = express();
  stub.use(express.json());
  stub.all(/.*/, (req, res) => {
    seen.push({ path: req.path, headers: req.headers });
    if (req.path === "/console/api/sign-in") res.status(req.body?.password === "right" ? 200 : 401).json({});
    else res.json({ path: req.path });
  });
  consoleServer = await startHttpServer(stub, 0, "127.0.0.1");
  const app = createServiceApp({
    logger: createLogger({ service: "t", level: "silent" }),
    metrics: createMetrics("ingress", { defaults: false }),
    trustRequestId: false,
  });
  app.use(consoleProxy({ url: consoleServer.url, failedSignInsPerMinute: 3, clock: () => now }));
  finishApp(app);
  ingress = await startHttpServer(app, 0, "127.0.0.1");
}, 30_000);
afterAll(async () => {
  await ingress?.close(1_000);
  await consoleServer?.close(1_000);
});

const signIn = (password: string) =>
  fetch(`${ingress.url}/console/api/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ password }) });

describe("the console through ingress", () => {
  it("when a page or an API call is asked for, then it reaches the console with the client's address and without client x-gw-* headers", async () => {
    const res = await fetch(`${ingress.url}/console/api/session`, { headers: { "x-gw-principal": "forged", "x-gw-client-address": "10.9.9.9" } });
    expect(await res.json()).toEqual({ path: "/console/api/session" });
    const last = seen.at(-1);
    expect(last?.headers["x-gw-principal"]).toBeUndefined();
    expect(last?.headers["x-gw-client-address"]).toBe("127.0.0.1");
    expect((await fetch(`${ingress.url}/v1/models`)).status).toBe(404);
  });

  it("when an address fails to sign in too often, then it is refused here until the minute is over; sign-ins that succeed never count", async () => {
    for (let i = 0; i < 5; i++) expect((await signIn("right")).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await signIn("wrong")).status).toBe(401);
    const before = seen.length;
    const refused = await signIn("right");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(seen.length).toBe(before);
    now += 60_000;
    expect((await signIn("right")).status).toBe(200);
  });
});
