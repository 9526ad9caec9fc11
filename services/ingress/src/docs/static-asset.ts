import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { Request, Response } from "express";

const gzipAsync = promisify(gzip);

/** A body served as is, with its validators: built once, compressed once (off the event loop) when first asked for. */
export interface StaticAsset {
  body: Buffer;
  type: string;
  cacheControl: string;
  etag: string;
  /** The gzip form, made on first use. */
  gzipped?: Promise<Buffer>;
}

export function staticAsset(body: Buffer | string, type: string, cacheControl: string): StaticAsset {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  return { body: bytes, type, cacheControl, etag: createHash("sha256").update(bytes).digest("base64url").slice(0, 27) };
}

/**
 * Answers GET and HEAD: 304 when the caller already has it (either encoding), else the body,
 * gzipped for a caller that takes gzip. Each encoding has its own strong ETag, as HTTP asks.
 */
export async function sendAsset(req: Request, res: Response, asset: StaticAsset, headers: Record<string, string> = {}): Promise<void> {
  const gzipped = req.acceptsEncodings("gzip", "identity") === "gzip";
  const etag = `"${asset.etag}${gzipped ? "-gz" : ""}"`;
  res.setHeader("cache-control", asset.cacheControl);
  res.setHeader("vary", "accept-encoding");
  res.setHeader("x-content-type-options", "nosniff");
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader("etag", etag);
  if (matches(req.headers["if-none-match"], asset.etag)) {
    res.status(304).end();
    return;
  }
  if (gzipped) asset.gzipped ??= gzipAsync(asset.body);
  const body = gzipped && asset.gzipped ? await asset.gzipped : asset.body;
  res.status(200);
  res.setHeader("content-type", asset.type);
  res.setHeader("content-length", body.length);
  if (gzipped) res.setHeader("content-encoding", "gzip");
  res.end(req.method === "HEAD" ? undefined : body);
}

/** If-None-Match holds `*` or one of the asset's tags (weak or strong, either encoding). */
function matches(header: string | undefined, tag: string): boolean {
  if (!header) return false;
  return header.split(",").some((entry) => {
    const value = entry.trim().replace(/^W\//, "");
    return value === "*" || value === `"${tag}"` || value === `"${tag}-gz"`;
  });
}
