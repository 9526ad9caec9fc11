import { existsSync } from "node:fs";
import { join } from "node:path";
import express, { type Express } from "express";

/**
 * The web app's files (Vite's build). Hashed assets are cached for a year; index.html, which names
 * them, never, so a new version is picked up on the next load. Every page gets a strict
 * Content-Security-Policy: scripts, styles and calls from this origin only, no framing.
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export function mountWebApp(app: Express, dist: string): void {
  app.use("/console", (req, res, next) => {
    if (req.path.startsWith("/api/")) return next();
    res.setHeader("content-security-policy", contentSecurityPolicy);
    res.setHeader("x-content-type-options", "nosniff");
    res.setHeader("x-frame-options", "DENY");
    res.setHeader("referrer-policy", "no-referrer");
    next();
  });
  app.use("/console/assets", express.static(join(dist, "assets"), { immutable: true, maxAge: "365d", index: false, fallthrough: false }));
  app.use("/console", express.static(dist, { index: false, maxAge: "1h" }));
  // Every other page of the app is the app itself (it routes in the browser).
  app.get(/^\/console(\/.*)?$/, (req, res, next) => {
    if (req.path.startsWith("/console/api/")) return next();
    const index = join(dist, "index.html");
    if (!existsSync(index)) {
      res.status(503).type("text/plain").send("The console's web app is not built: run `pnpm build:console` (pnpm install does it).\n");
      return;
    }
    res.setHeader("cache-control", "no-cache");
    res.sendFile(index);
  });
}
