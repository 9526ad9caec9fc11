import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { staticAsset, type StaticAsset } from "./static-asset";

/**
 * The reference page: Redoc's standalone bundle, served by the gateway itself (no CDN: many
 * deployments have no internet), rendering /openapi.json. Redoc 2 is the newest major that supports
 * Node 20 (3.x asks for 22) and its bundle holds everything it needs. Its styles are injected at run
 * time (styled-components), hence `style-src 'unsafe-inline'`; its search index runs in a worker it
 * starts from a blob. Nothing else may load, run or connect beyond this origin.
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export interface ReferencePage {
  page: StaticAsset;
  /** The renderer's path under /docs/ (named by its content, so cached for good), if it is installed. */
  scriptPath?: string;
  script?: StaticAsset;
}

const RENDERER = "redoc/bundles/redoc.standalone.js";

/**
 * Where the renderer is: beside the module, where `pnpm build` copies it next to the ingress bundle
 * (an image has no node_modules), else in the redoc package, as when running the sources.
 */
function rendererCandidates(): string[] {
  const beside = fileURLToPath(new URL("./redoc.standalone.js", import.meta.url));
  try {
    return [beside, createRequire(import.meta.url).resolve(RENDERER)];
  } catch {
    return [beside];
  }
}

async function readRenderer(): Promise<Buffer | undefined> {
  for (const path of rendererCandidates()) {
    try {
      return await readFile(path);
    } catch {
      // not there: the next place
    }
  }
  return undefined;
}

/**
 * Reads the renderer (1.1 MB) on the first visit rather than at start: most gateways never serve
 * the page. Paths are relative, so the page also works behind a proxy that adds a prefix.
 */
export async function loadReferencePage(title: string): Promise<ReferencePage> {
  const bundle = await readRenderer();
  // A build that left the renderer out still serves the document itself.
  const script = bundle && staticAsset(bundle, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable");
  const scriptPath = script && `/docs/redoc.${script.etag.slice(0, 16)}.js`;
  const body = scriptPath
    ? `<redoc spec-url="openapi.json"></redoc>\n<script src="${scriptPath.slice(1)}"></script>`
    : `<p>The reference page's renderer is not installed in this build. The API's description is at <a href="openapi.json">openapi.json</a>.</p>`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; }</style>
</head>
<body>
${body}
</body>
</html>
`;
  return { page: staticAsset(html, "text/html; charset=utf-8", "no-cache"), scriptPath, script };
}
