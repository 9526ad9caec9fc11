import express, { type RequestHandler } from "express";

/**
 * How deep arrays and objects may nest in a request body. Real requests stay under ten levels (a
 * JSON schema inside a tool definition inside a message goes deepest); the bound is far above that
 * and far below what recursive code (ours, a provider's, Postgres's JSON parser) survives.
 */
export const MAX_JSON_DEPTH = 64;

export const tooDeepMessage = `Invalid body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * Whether JSON text nests arrays and objects deeper than `max`. It reads the bytes once, jumping over
 * strings with a native search, so it costs little next to JSON.parse and runs before it: a hostile
 * body is refused before anything builds its structure.
 */
export function jsonDepthExceeds(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === 0x22 /* " */) {
      i = closingQuote(bytes, i);
      if (i < 0) return false; // unterminated: the parser refuses it
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that closes the string opened at `open`: one not escaped by a backslash. */
function closingQuote(bytes: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(0x22, at + 1);
    if (at < 0) return -1;
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * The services' JSON body parser: any content type (ingress has already checked it), the service's
 * size limit, and the same nesting bound as the door, as a second line should a request ever reach
 * a service some other way. The error is shaped as body-parser's own, so it becomes a 400.
 */
export function jsonBody(limit: string): RequestHandler {
  return express.json({
    limit,
    type: () => true,
    verify: (_req, _res, buffer) => {
      if (jsonDepthExceeds(buffer)) throw Object.assign(new Error(tooDeepMessage), { status: 400, type: "entity.too.deep" });
    },
  });
}
