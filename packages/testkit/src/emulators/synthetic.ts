import { createHash } from "node:crypto";

/**
 * Deterministic stand-ins for model output. Everything here is a pure function of the request, so
 * tests can predict answers exactly and a benchmark pays only for string work.
 *
 * "Tokens" are whitespace-delimited pieces (`/\s*\S+/`), each keeping its leading whitespace:
 * "Echo: hi there" → ["Echo:", " hi", " there"]. A streamed text chunk is exactly one piece, so
 * usage counts, max-token truncation and chunk counts all agree.
 */

export type JsonObject = Record<string, unknown>;

export function isRecord(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function pieces(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

export function countTokens(text: string): number {
  return pieces(text).length;
}

/** Tool-call arguments have no spaces, so they are priced like real BPE output: ~4 chars a token. */
export function jsonTokens(json: string): number {
  return Math.max(1, Math.ceil(json.length / 4));
}

/** Cuts `text` before the earliest stop sequence, as providers do (the stop text is not returned). */
export function applyStop(text: string, stops: readonly string[]): { text: string; stop: string | null } {
  let at = -1;
  let hit: string | null = null;
  for (const s of stops) {
    if (!s) continue;
    const i = text.indexOf(s);
    if (i !== -1 && (at === -1 || i < at)) {
      at = i;
      hit = s;
    }
  }
  return hit === null ? { text, stop: null } : { text: text.slice(0, at), stop: hit };
}

/** Keeps the first `max` pieces; `truncated` tells the caller to report a length stop. */
export function limitTokens(text: string, max: number | undefined): { text: string; truncated: boolean } {
  if (max === undefined) return { text, truncated: false };
  const p = pieces(text);
  if (p.length <= max) return { text, truncated: false };
  return { text: p.slice(0, Math.max(0, max)).join(""), truncated: true };
}

/** Splits a JSON string into up to `parts` fragments on code-point boundaries (never mid-surrogate). */
export function fragments(s: string, parts = 4): string[] {
  const cps = Array.from(s);
  const size = Math.max(1, Math.ceil(cps.length / parts));
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(""));
  return out;
}

/**
 * A hash for every prefix of `parts` (chained sha256 under `seed`): two prompts share entry i
 * exactly when their seeds and first i+1 parts are equal, which is how prompt caches match prefixes.
 */
export function prefixHashes(seed: string, parts: readonly string[]): string[] {
  let hash = createHash("sha256").update(seed).digest("base64");
  const out: string[] = [];
  for (const part of parts) {
    hash = createHash("sha256").update(hash).update("\u0000").update(part).digest("base64");
    out.push(hash);
  }
  return out;
}

/** Running totals: `cumulative([2, 3, 1])` → [2, 5, 6]. */
export function cumulative(values: readonly number[]): number[] {
  const out: number[] = [];
  let sum = 0;
  for (const v of values) {
    sum += v;
    out.push(sum);
  }
  return out;
}

/**
 * Marks `key` as most recently used in an insertion-ordered set, dropping the oldest keys beyond
 * `limit`: an emulated prompt cache evicts like a real one instead of growing through a benchmark.
 */
export function rememberKey(keys: Set<string>, key: string, limit = 10_000): void {
  keys.delete(key);
  keys.add(key);
  for (const oldest of keys) {
    if (keys.size <= limit) break;
    keys.delete(oldest);
  }
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Random base62 ids; ids are not part of the deterministic contract, and Math.random is cheap. */
export function randomId(length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) s += ALPHABET[Math.floor(Math.random() * ALPHABET.length)];
  return s;
}

/**
 * A value that satisfies a (JSON Schema) tool parameter schema, built from `text`: strings get the
 * text, numbers its length, booleans true, enums/consts their first value, arrays one item, objects
 * every declared property. Schemas without properties give `{}` (what a model sends for a no-arg tool).
 */
export function valueForSchema(schema: unknown, text: string, depth = 0): unknown {
  if (!isRecord(schema) || depth > 6) return depth === 0 ? {} : null;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      const pick = branches.find((b) => !(isRecord(b) && b.type === "null")) ?? branches[0];
      return valueForSchema(pick, text, depth);
    }
  }
  const declared = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const type = declared ?? (isRecord(schema.properties) ? "object" : undefined);
  switch (type) {
    case "string":
      return text;
    case "integer":
    case "number":
      return text.length;
    case "boolean":
      return true;
    case "null":
      return null;
    case "array":
      return schema.items === undefined ? [] : [valueForSchema(schema.items, text, depth + 1)];
    case "object": {
      const out: JsonObject = {};
      if (isRecord(schema.properties)) {
        for (const [k, v] of Object.entries(schema.properties)) out[k] = valueForSchema(v, text, depth + 1);
      }
      return out;
    }
    default:
      return depth === 0 ? {} : text;
  }
}

const DEFAULT_DIMENSIONS: Record<string, number> = { "text-embedding-3-large": 3072 };

export function defaultEmbeddingDimensions(model: string): number {
  return DEFAULT_DIMENSIONS[model] ?? 1536;
}

/**
 * A unit-length vector seeded by the text (FNV-1a → xorshift32). It is produced as float32, so the
 * float encoding and the base64 (little-endian float32) encoding carry exactly the same numbers.
 */
export function embeddingVector(text: string, dimensions: number): Float32Array {
  let seed = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 0x01000193);
  seed = seed >>> 0 || 1;
  const v = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    seed >>>= 0;
    const x = seed / 0x100000000 - 0.5;
    v[i] = x;
    norm += x * x;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) v[i] = (v[i] ?? 0) * scale;
  return v;
}

export function float32ToBase64(v: Float32Array): string {
  const buf = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i] ?? 0, i * 4);
  return buf.toString("base64");
}
