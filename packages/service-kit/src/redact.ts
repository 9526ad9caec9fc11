import type { CapturedBody } from "@gw/contracts";

/**
 * Redaction of captured bodies (detailed logs), at capture, at any depth: a field whose name says it
 * holds a credential keeps its name and loses its value, and any string that looks like a key or a
 * token (ours, OpenAI's, Anthropic's, a bearer token, an AWS or GitHub key) is replaced wherever it
 * appears in the text.
 */
export const REDACTED = "[REDACTED]";

const SECRET_FIELD =
  /^(authorization|proxy[-_]?authorization|api[-_]?key|x[-_]api[-_]key|apikey|token|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|secret|client[-_]?secret|password|passwd|pwd|credentials?|private[-_]?key|cookie|set[-_]?cookie)$/i;

const SECRET_TEXT: RegExp[] = [
  /gw_live_[A-Za-z0-9_-]{8,}/g,
  /\bsk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{16,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/-]{8,}=*/gi,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g,
  /\btvly-[A-Za-z0-9_-]{16,}/g,
];

// In text that is not JSON we can walk (cut at the cap), a credential field's quoted value.
const SECRET_FIELD_IN_TEXT =
  /("(?:authorization|proxy[-_]?authorization|api[-_]?key|x[-_]api[-_]key|apikey|token|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|secret|client[-_]?secret|password|passwd|pwd|credentials?|private[-_]?key|cookie|set[-_]?cookie)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;

/**
 * Key-like strings replaced, and `secrets` (the configured provider keys this process can read)
 * wherever they appear; a secret shorter than 8 characters is not looked for (it would match words).
 */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const pattern of SECRET_TEXT) out = out.replace(pattern, REDACTED);
  for (const secret of secrets) if (secret.length >= 8 && out.includes(secret)) out = out.replaceAll(secret, REDACTED);
  return out;
}

/** A deep copy of a parsed JSON value with every credential removed. */
export function redactValue(value: unknown, secrets: readonly string[] = []): unknown {
  if (typeof value === "string") return redactText(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(value)) out[name] = SECRET_FIELD.test(name) && v !== null ? REDACTED : redactValue(v, secrets);
    return out;
  }
  return value;
}

/** Redaction of text that could not be parsed (a body cut at the cap): credential fields, then key-like strings. */
export function redactRawText(text: string, secrets: readonly string[] = []): string {
  return redactText(text.replace(SECRET_FIELD_IN_TEXT, `$1"${REDACTED}"`), secrets);
}

/** A captured body's text cut at `maxBytes` (on a character boundary), saying so, with its original size. */
export function cutBody(text: string, bytes: number, contentType: string | undefined, maxBytes: number, alreadyCut = false): CapturedBody {
  const encoded = Buffer.from(text, "utf8");
  const over = encoded.length > maxBytes;
  const kept = over
    ? encoded
        .subarray(0, maxBytes)
        .toString("utf8")
        .replace(/\uFFFD+$/, "")
    : text;
  return { text: kept, truncated: over || alreadyCut, bytes, ...(contentType ? { content_type: contentType } : {}) };
}

/** A parsed JSON body as a detailed log keeps it: redacted, serialised, cut. */
export function capturedJson(value: unknown, bytes: number, maxBytes: number, secrets: readonly string[] = []): CapturedBody {
  return cutBody(JSON.stringify(redactValue(value, secrets)), bytes, "application/json", maxBytes);
}
