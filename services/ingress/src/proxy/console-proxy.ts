import { Agent } from "node:http";
import type { Request, RequestHandler, Response } from "express";
import { createProxyMiddleware, proxyEventsPlugin, type Plugin } from "http-proxy-middleware";
import { clientAddressHeader, internalHeaderPrefix } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { sendError } from "@gw/service-kit";
import { parsedTarget } from "./forward";

export interface ConsoleProxyOptions {
  /** The console service (CONSOLE_URL). */
  url: string;
  /** Failed sign-ins (password or link) one address may make per minute at this replica. */
  failedSignInsPerMinute?: number;
  clock?: () => number;
}

const signInPath = /^\/console\/api\/sign-in(\/|$)/;
const MAX_TRACKED_ADDRESSES = 50_000;

/**
 * `/console/*` to the console service, before any key is asked for (people sign in there). Client
 * `x-gw-*` headers are dropped and the address ingress saw is passed on, which the console's own
 * throttle counts; failed sign-ins are also capped per address here, so a flood of guesses is
 * refused before it costs the console a password hash (people who sign in fine are never slowed).
 */
export function consoleProxy(options: ConsoleProxyOptions): RequestHandler {
  const clock = options.clock ?? Date.now;
  const perMinute = options.failedSignInsPerMinute ?? 20;
  const windows = new Map<string, { start: number; count: number }>();
  const proxy = createProxyMiddleware<Request, Response>({
    target: parsedTarget(options.url),
    agent: new Agent({ keepAlive: true }),
    changeOrigin: false,
    xfwd: false,
    ejectPlugins: true,
    plugins: [proxyEventsPlugin as unknown as Plugin<Request, Response>],
    on: {
      proxyReq: (proxyReq, req) => {
        proxyReq.setHeader(clientAddressHeader, (req as Request).ip ?? req.socket.remoteAddress ?? "");
        proxyReq.setHeader("x-forwarded-host", req.headers.host ?? "");
        proxyReq.setHeader("x-forwarded-proto", (req as Request).protocol);
      },
      error: (err, req, res) => {
        if (!("setHeader" in res) || res.headersSent) {
          res.destroy();
          return;
        }
        (res as Response).locals.log?.warn({ err: err.message }, "console call failed");
        sendError(res as Response, new GatewayError("upstream_unavailable", "The console is unavailable; try again"), (req as Request).path);
      },
    },
  }) as RequestHandler;

  return (req, res, next) => {
    if (req.path !== "/console" && !req.path.startsWith("/console/")) return next();
    res.locals.route = "/console";
    for (const name of Object.keys(req.headers)) {
      if (name.startsWith(internalHeaderPrefix)) delete req.headers[name];
    }
    if (req.method === "POST" && signInPath.test(req.path)) {
      const address = req.ip ?? req.socket.remoteAddress ?? "";
      const now = clock();
      let window = windows.get(address);
      if (window && now - window.start >= 60_000) {
        windows.delete(address);
        window = undefined;
      }
      if (window && window.count >= perMinute) {
        const retryAfter = Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
        throw new GatewayError("too_many_auth_failures", `Too many failed sign-ins from this address; try again in ${retryAfter} seconds`, {
          headers: { "retry-after": String(retryAfter) },
          retryable: false,
        });
      }
      res.once("finish", () => {
        if (res.statusCode !== 401 && res.statusCode !== 400) return;
        let current = windows.get(address);
        if (!current || clock() - current.start >= 60_000) {
          if (windows.size >= MAX_TRACKED_ADDRESSES) windows.clear();
          current = { start: clock(), count: 0 };
          windows.set(address, current);
        }
        current.count++;
      });
    }
    proxy(req, res, next);
  };
}
