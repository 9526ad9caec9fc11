import express, { type RequestHandler } from "express";

/**
 * How deep arrays and objects may nest in a request body. Real requests stay under ten levels (a
 * JSON schema inside a tool definition inside a message goes deepest); the bound is far above that
 * and far below what recursive code (ours, a provider's, Postgres's JSON parser) survives.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * How many members one object may hold, and how many members and items (members and array elements)
 * a body may hold in all. Parsing is what they bound: V8 turns an object of many members into a
 * dictionary and interns each new member name, so a 4.4 MB body of one object with 375,000 members
 * took 0.9 s to parse on our machine (and each service parses a body once), a 32 MB array of zeros
 * 2.3 s, against 0.23 s for 32 MB of prose. Within these bounds the worst body parses in about the
 * time of the largest ordinary one. Real requests stay far below them: OpenAI caps an embeddings
 * request at 300,000 tokens in all, and a tool's schema has hundreds of properties, not thousands.
 */
const bodyBounds: JsonBounds = { depth: MAX_JSON_DEPTH, objectMembers: 10_000, members: 250_000, items: 1_000_000 };

export interface JsonBounds {
  depth: number;
  objectMembers: number;
  members: number;
  items: number;
}

const count = (n: number) => n.toLocaleString("en-US");
/** Each open container's member count (-1 for an array); reused, as the scan is synchronous. */
let open = new Int32Array(MAX_JSON_DEPTH + 2);

/**
 * What, if anything, puts JSON text past the bounds: nesting deeper than `depth`, an object of more
 * than `objectMembers` members, more than `members` members or `items` items in all. It reads the
 * bytes once, jumping over strings with a native search, so it costs little next to JSON.parse and
 * runs before it: a hostile body is refused before anything builds its structure. Text that is not
 * JSON may pass; the parser refuses it.
 */
export function jsonShapeProblem(bytes: Uint8Array, bounds: JsonBounds = bodyBounds): string | undefined {
  if (open.length < bounds.depth + 2) open = new Int32Array(bounds.depth + 2);
  let depth = 0;
  let members = 0;
  let items = 0;
  // Set on an opening bracket: the next byte that is not white space says whether it holds an item.
  let opened = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (opened && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
      opened = false;
      if (c !== 0x5d /* ] */ && c !== 0x7d /* } */ && ++items > bounds.items) return tooManyItems(bounds.items);
    }
    if (c === 0x22 /* " */) {
      i = closingQuote(bytes, i);
      if (i < 0) return undefined; // unterminated: the parser refuses it
    } else if (c === 0x2c /* , */) {
      if (++items > bounds.items) return tooManyItems(bounds.items);
    } else if (c === 0x3a /* : */) {
      if (depth > 0 && open[depth] !== -1 && ++open[depth]! > bounds.objectMembers) {
        return `Invalid body: a JSON object has more than ${count(bounds.objectMembers)} members`;
      }
      if (++members > bounds.members) return `Invalid body: JSON holds more than ${count(bounds.members)} object members in all`;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > bounds.depth) return `Invalid body: JSON nested deeper than ${bounds.depth} levels`;
      open[depth] = c === 0x5b ? -1 : 0;
      opened = true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--;
    }
  }
  return undefined;
}

function tooManyItems(bound: number): string {
  return `Invalid body: JSON holds more than ${count(bound)} array elements and object members in all`;
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
 * size limit, and the same bounds as the door, as a second line should a request ever reach a
 * service some other way. The error is shaped as body-parser's own, so it becomes a 400.
 */
export function jsonBody(limit: string): RequestHandler {
  return express.json({
    limit,
    type: () => true,
    verify: (_req, _res, buffer) => {
      const problem = jsonShapeProblem(buffer);
      if (problem) throw Object.assign(new Error(problem), { status: 400, type: "entity.shape" });
    },
  });
}
