import { Agent, createServer, request, type RequestListener } from "node:http";
import type { AddressInfo, Server } from "node:net";
import express from "express";
import { createProxyMiddleware } from "http-proxy-middleware";
import { createClient } from "redis";
import { startHttpServer } from "@gw/service-kit";
import { startTcpProxy } from "@gw/testkit";

/**
 * A proxy with nothing of the gateway in it, as its own process, to show what one hop costs before
 * any of our work. FLOOR_TARGET is the origin it forwards to; FLOOR_KIND picks the proxy:
 * - `tcp`: testkit's TCP relay, bytes between two sockets with no HTTP parsing: what a process hop
 *   costs in the kernel and the event loop alone, the floor under any HTTP proxy on this machine;
 * - `node`: node:http piped to node:http, served by `startHttpServer` as the services are;
 * - `stack`: the stack the gateway must use (express reading the body, then http-proxy-middleware
 *   over a keep-alive agent), as ingress forwards, served by `startHttpServer`;
 * - `stack-default`: the same app served the way express serves itself (`http.createServer(app)`),
 *   to show what the gateway's server saves.
 * With FLOOR_REDIS_URL, the stack proxy also makes one Redis round trip per request before
 * forwarding (a PING: the round trip, not our limiter's work), as ingress's limiter does.
 * Prints `{"url": …}` once listening; stops on SIGTERM.
 */
const target = new URL(process.env.FLOOR_TARGET ?? "");
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

const nodeProxy: RequestListener = (req, res) => {
  const hop = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  req.pipe(hop);
};

async function stackApp(): Promise<express.Express> {
  const app = express();
  app.disable("x-powered-by");
  app.use(express.raw({ type: () => true, limit: "1mb" }));
  const redisUrl = process.env.FLOOR_REDIS_URL;
  if (redisUrl) {
    const redis = createClient({ url: redisUrl });
    await redis.connect();
    app.use(async (_req, _res, next) => {
      await redis.ping();
      next();
    });
  }
  app.use(
    createProxyMiddleware({
      target: target.origin,
      agent,
      changeOrigin: false,
      on: {
        proxyReq(hop, req) {
          const body = (req as express.Request).body;
          if (Buffer.isBuffer(body)) {
            hop.setHeader("content-length", body.length);
            hop.write(body);
          }
        },
      },
    }),
  );
  return app;
}

async function listenOn(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function listen(kind: string | undefined): Promise<{ url: string; close(): Promise<void> }> {
  if (kind === "tcp") {
    const relay = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    return { url: `http://127.0.0.1:${relay.port}`, close: relay.close };
  }
  if (kind === "node") return startHttpServer(nodeProxy, 0, "127.0.0.1");
  if (kind === "stack") return startHttpServer(await stackApp(), 0, "127.0.0.1");
  if (kind !== "stack-default") throw new Error(`FLOOR_KIND must be tcp, node, stack or stack-default, not ${kind}`);
  return listenOn(createServer(await stackApp()));
}

const server = await listen(process.env.FLOOR_KIND);
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
process.once("SIGTERM", () => void server.close().then(() => process.exit(0)));
