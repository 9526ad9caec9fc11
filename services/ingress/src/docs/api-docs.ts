import type { Express, Request, Response } from "express";
import { buildInfo } from "@gw/config";
import { buildApiDocument } from "@gw/openapi";
import { contentSecurityPolicy, loadReferencePage, type ReferencePage } from "./reference-page";
import { sendAsset, staticAsset } from "./static-asset";

const O = 111; // "o" of /openapi.json
const D = 100; // "d" of /docs

/**
 * `GET /openapi.json` (the OpenAPI 3.1 document of the public API) and `GET /docs` (its reference
 * page), without a key. The document is built once, here, and kept; the page on its first visit.
 * On the /v1 path this costs one character comparison.
 */
export function mountApiDocs(app: Express): void {
  const document = buildApiDocument({ version: buildInfo().version });
  const title = `${String((document.info as { title: string }).title)} reference`;
  // The document changes only with a release: a day's caching, then the ETag revalidates it.
  const spec = staticAsset(JSON.stringify(document), "application/json; charset=utf-8", "public, max-age=86400");
  let page: Promise<ReferencePage> | undefined;

  app.use((req, res, next) => {
    const second = req.url.charCodeAt(1);
    if ((second !== O && second !== D) || (req.method !== "GET" && req.method !== "HEAD")) return next();
    const path = req.path;
    if (path === "/openapi.json") {
      res.locals.route = path;
      // Public and credential-free: any origin's tools (an editor, a client generator) may read it.
      return void sendAsset(req, res, spec, { "access-control-allow-origin": "*" }).catch(next);
    }
    if (path !== "/docs" && !path.startsWith("/docs/")) return next();
    res.locals.route = "/docs";
    if (path === "/docs/") return void res.redirect(308, "../docs");
    page ??= loadReferencePage(title);
    void page.then((loaded) => serveDocs(req, res, path, loaded, next)).catch(next);
  });
}

function serveDocs(req: Request, res: Response, path: string, loaded: ReferencePage, next: (err?: unknown) => void): void {
  if (path === "/docs")
    return void sendAsset(req, res, loaded.page, { "content-security-policy": contentSecurityPolicy, "referrer-policy": "no-referrer" }).catch(next);
  if (loaded.script && path === loaded.scriptPath) return void sendAsset(req, res, loaded.script).catch(next);
  next();
}
