import { Agent, createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { createProxyMiddleware } from "http-proxy-middleware";
import { createClient } from "redis";

/**
 * A proxy with nothing of the gateway in it, as its own process, to show what one hop costs before
 * any of our work: FLOOR_KIND=node pipes node:http to node:http; FLOOR_KIND=stack is the stack the
 * gateway must use (express reading the body, then http-proxy-middleware over a keep-alive agent),
 * as ingress forwards. With FLOOR_REDIS_URL, the stack proxy also makes one Redis round trip per
 * request before forwarding (a PING: the round trip, not our limiter's work), as ingress's limiter
 * does. Prints `{"url": …}` once listening; stops on SIGTERM.
 */
const target = new URL(process.env.FLOOR_TARGET ?? "");
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

function nodeProxy(): Server {
  return createServer((req, res) => {
    const hop = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(hop);
  });
}

async function stackProxy(): Promise<Server> {
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
  return createServer(app);
}

const server = process.env.FLOOR_KIND === "node" ? nodeProxy() : await stackProxy();
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
process.once("SIGTERM", () => server.close(() => process.exit(0)));
