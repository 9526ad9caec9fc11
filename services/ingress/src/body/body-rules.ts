import type { IncomingMessage } from "node:http";
import { parse } from "content-type";
import { GatewayError } from "@gw/errors";
import type { RouteTarget } from "../routes";

/** Whether the request carries a body at all (HTTP/1.1: a length above zero, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * The body a route takes, checked from the headers before anything is read: a JSON route takes
 * `application/json` in UTF-8, the upload route `multipart/form-data`, a read no body at all. The
 * services would parse whatever arrived, so a body of another type would skip the token estimate
 * that only a JSON or multipart body gets; here it is a 415 instead.
 */
export function bodyRule(req: IncomingMessage, target: RouteTarget): void {
  if (!hasBody(req)) return;
  if (target.body === "none") {
    throw new GatewayError("body_too_large", `${target.method} ${req.url?.split("?")[0]} takes no request body`);
  }
  const { type, charset, boundary } = parseContentType(req.headers["content-type"]);
  if (target.body === "json") {
    if (type !== "application/json") throw unsupported(type, "a JSON body: send `content-type: application/json`");
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") throw unsupported(`${type}; charset=${charset}`, "JSON in UTF-8");
    return;
  }
  if (type !== "multipart/form-data" || !boundary) {
    throw unsupported(type, "a multipart/form-data body with a boundary (a file upload)");
  }
}

function unsupported(type: string, wanted: string): GatewayError {
  return new GatewayError("unsupported_media_type", `Unsupported content type ${type ? `\`${type}\`` : "(none)"}: this route takes ${wanted}`, {
    param: "content-type",
  });
}

/** The lower-cased media type and its parameters (content-type lower-cases the type; charset is lower-cased here). */
function parseContentType(header: string | undefined): { type: string; charset?: string; boundary?: string } {
  if (!header) return { type: "" };
  try {
    const { type, parameters } = parse(header);
    return { type, charset: parameters.charset?.toLowerCase(), boundary: parameters.boundary };
  } catch {
    return { type: header.split(";")[0]?.trim().toLowerCase() ?? "" };
  }
}
