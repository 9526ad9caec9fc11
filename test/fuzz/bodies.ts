import { brotliCompressSync, constants, deflateSync, gzipSync } from "node:zlib";

/**
 * Byte builders for the generators: a valid body with a hole where a hostile value goes (so that
 * value can be bytes no JSON encoder would write), nesting, huge values, multipart forms, and
 * compressed bodies including a small zip bomb.
 */

const SLOT = "\u0001fuzz-slot\u0001";

/** Where in a body a value goes: a known field (dotted path), an unknown field, or the whole body. */
export type Place = { at: "field"; path: string } | { at: "unknown" } | { at: "top" };

/** The body's JSON text split around `place`: prefix + value + suffix is the request. */
export function around(body: Record<string, unknown>, place: Place): [string, string] {
  if (place.at === "top") return ["", ""];
  const copy = structuredClone(body);
  if (place.at === "unknown") copy.x_fuzz = SLOT;
  else setPath(copy, place.path, SLOT);
  const text = JSON.stringify(copy);
  const hole = JSON.stringify(SLOT);
  const at = text.indexOf(hole);
  return [text.slice(0, at), text.slice(at + hole.length)];
}

/** prefix + raw value bytes + suffix. */
export function withValue(body: Record<string, unknown>, place: Place, value: Buffer | string): Buffer {
  const [before, after] = around(body, place);
  return Buffer.concat([Buffer.from(before), typeof value === "string" ? Buffer.from(value) : value, Buffer.from(after)]);
}

export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split(".");
  let node: Record<string, unknown> = target;
  parts.forEach((part, i) => {
    if (i === parts.length - 1) {
      node[part] = value;
      return;
    }
    const next = node[part];
    if (typeof next !== "object" || next === null) node[part] = /^\d+$/.test(parts[i + 1] ?? "") ? [] : {};
    node = node[part] as Record<string, unknown>;
  });
}

export type Nesting = "array" | "object" | "mixed";

/** `depth` levels of containers around a scalar, written without recursion. */
export function nested(depth: number, kind: Nesting): string {
  let open = "";
  let close = "";
  for (let i = 0; i < depth; i++) {
    const array = kind === "array" || (kind === "mixed" && i % 2 === 0);
    open += array ? "[" : '{"a":';
    close = (array ? "]" : "}") + close;
  }
  return `${open}1${close}`;
}

export type HugeKind = "string" | "multibyte-string" | "escapes" | "array" | "keys" | "digits" | "exponent";

/** A single JSON value of roughly `size` elements of the given kind. */
export function huge(kind: HugeKind, size: number): string {
  switch (kind) {
    case "string":
      return `"${"a".repeat(size)}"`;
    case "multibyte-string":
      return `"${"é😀".repeat(Math.ceil(size / 3))}"`;
    case "escapes":
      return `"${"\\u0041".repeat(Math.ceil(size / 6))}"`;
    case "array":
      return `[${new Array(Math.ceil(size / 2)).fill("0").join(",")}]`;
    case "keys": {
      const n = Math.ceil(size / 8);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) parts.push(`"k${i}":0`);
      return `{${parts.join(",")}}`;
    }
    case "digits":
      return `1${"0".repeat(size)}`;
    case "exponent":
      return size % 2 === 0 ? `1e${size}` : `-1e-${size}`;
  }
}

/** Bytes that are not valid UTF-8, or are code points no text should carry. */
export const badUtf8: Record<string, number[]> = {
  "overlong slash C0 AF": [0xc0, 0xaf],
  "overlong NUL C0 80": [0xc0, 0x80],
  "UTF-8 surrogate ED A0 80": [0xed, 0xa0, 0x80],
  "lone FF": [0xff],
  "FE FF": [0xfe, 0xff],
  "E9 FF": [0xe9, 0xff],
  "5-byte F8 88 80 80 80": [0xf8, 0x88, 0x80, 0x80, 0x80],
  "truncated E2 82": [0xe2, 0x82],
  "above U+10FFFF F4 90 80 80": [0xf4, 0x90, 0x80, 0x80],
  "raw NUL": [0x00],
  "raw US 1F": [0x1f],
  "raw DEL 7F": [0x7f],
};

/** JSON escapes that decode to NUL, lone surrogates and other awkward code points. */
export const badEscapes = [
  "\\u0000",
  "\\u0000\\u0000",
  "\\ud800",
  "\\udfff",
  "\\udc00\\ud800",
  "\\uDBFF",
  "\\ud83d",
  "\\uffff",
  "\\ufffe",
  "\\ufeff",
  "\\u202e",
  "\\u2028",
];

/** A JSON string literal holding `bad` (raw bytes or escape text) between plain text. */
export function stringWith(bad: Buffer, repeat: number): Buffer {
  const parts: Buffer[] = [Buffer.from('"ab')];
  for (let i = 0; i < repeat; i++) parts.push(bad);
  parts.push(Buffer.from('cd"'));
  return Buffer.concat(parts);
}

/** A small WAV-looking upload, as the openai client sends for transcriptions. */
export const audioFile = Buffer.alloc(2048, 7);

export interface Part {
  name: string | Buffer;
  value: string | Buffer;
  filename?: string | Buffer;
  type?: string;
}

/** multipart/form-data bytes for the given parts (the caller picks the boundary it announces). */
export function multipart(boundary: string, parts: Part[], terminate = true): Buffer {
  const chunks: Buffer[] = [];
  const b = (s: string | Buffer) => (typeof s === "string" ? Buffer.from(s) : s);
  for (const part of parts) {
    chunks.push(b(`--${boundary}\r\nContent-Disposition: form-data; name="`), b(part.name), b('"'));
    if (part.filename !== undefined) chunks.push(b('; filename="'), b(part.filename), b('"'));
    chunks.push(b(`\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ""}\r\n`), b(part.value), b("\r\n"));
  }
  if (terminate) chunks.push(b(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

/** The transcription form: its text fields plus the file. */
export function transcriptionParts(fields: Record<string, unknown>): Part[] {
  const parts: Part[] = Object.entries(fields).map(([name, value]) => ({ name, value: typeof value === "string" ? value : JSON.stringify(value) }));
  parts.push({ name: "file", value: audioFile, filename: "a.wav", type: "audio/wav" });
  return parts;
}

export type Coding = "gzip" | "deflate" | "br";

export function compress(coding: Coding, body: Buffer): Buffer {
  if (coding === "gzip") return gzipSync(body);
  if (coding === "deflate") return deflateSync(body);
  return brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } });
}

const bombs = new Map<Coding, Buffer>();

/**
 * A chat request whose text is 40 MiB of one letter, compressed: some 40 KB on the wire (a few KB
 * for brotli) that inflate beyond the 32 MiB body limit. Built once per coding.
 */
export function zipBomb(coding: Coding): Buffer {
  let bomb = bombs.get(coding);
  if (!bomb) {
    const text = Buffer.alloc(40 * 1024 * 1024 + 64, "a");
    const head = Buffer.from('{"model":"gpt","messages":[{"role":"user","content":"');
    head.copy(text, 0);
    Buffer.from('"}]}').copy(text, text.length - 4);
    bomb = compress(coding, text);
    bombs.set(coding, bomb);
  }
  return bomb;
}
