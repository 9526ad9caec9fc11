/**
 * What never reaches a log line: the value of any field whose name says it holds a credential, at
 * any depth; and, anywhere in the line (message, error stack, any string), our platform keys, bearer
 * and basic credentials, passwords in URLs, key-like query parameters, well-known provider key shapes
 * and every secret the process was told about, also in the encoded forms a header or URL gives it.
 *
 * It works on the line pino has already serialised, so it sees child bindings, serialised errors
 * and formatted messages alike; a line with nothing suspicious costs one regular-expression scan.
 */

export const censor = "[redacted]";

/** Field names compared lower-case without separators ("X-Api-Key", "api_key", "apiKey" → "apikey"). */
const exactNames = new Set(["key", "auth", "pass", "bearer", "xgwidentity"]);
const nameEndings = [
  "authorization",
  "token",
  "secret",
  "password",
  "passwd",
  "passphrase",
  "cookie",
  "credential",
  "credentials",
  "apikey",
  "masterkey",
  "privatekey",
  "secretkey",
  "accesskey",
  "subscriptionkey",
  "signingkey",
];

export function isSensitiveName(name: string): boolean {
  const n = name.toLowerCase().replace(/[-_. ]/g, "");
  if (exactNames.has(n)) return true;
  for (const ending of nameEndings) if (n.endsWith(ending)) return true;
  return false;
}

// The same names as they end a JSON key ("…": ) or an element of a header-pair array ("…", ).
const sep = "[-_. ]*";
const nameInJson = [
  "authorization",
  "token",
  "secret",
  "passw(?:or)?d",
  "passphrase",
  "cookie",
  "credentials?",
  `api${sep}key`,
  `master${sep}key`,
  `private${sep}key`,
  `secret${sep}key`,
  `access${sep}key`,
  `subscription${sep}key`,
  `signing${sep}key`,
  `x${sep}gw${sep}identity`,
  '"key',
  '"auth',
  '"pass',
  '"bearer',
].join("|");

/** String shapes that are credentials wherever they appear, with what replaces them. */
const shapes: Array<[RegExp, string]> = [
  [/gw_live_[0-9A-Za-z]{8,}/g, censor],
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${censor}`],
  [/\b(Basic)\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}/gi, `$1 ${censor}`],
  // user:password@ or token@ in any URL (a NATS or Redis URL may carry one)
  [/([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"\\]+@/gi, `$1${censor}@`],
  [/([?&;](?:api[-_]?key|key|token|access[-_]?token|secret|client[-_]?secret|password|auth|sig|signature)=)[^&\s"\\#]+/gi, `$1${censor}`],
  // A second net for credentials the logger cannot be told about, such as a workspace's own keys.
  [/\b(?:sk-(?:ant-|proj-)?|tvly-|jina_|gsk_|xai-|hf_|AIza)[A-Za-z0-9_-]{16,}/g, censor],
  // JSON web tokens (OIDC, NATS user JWTs) and NATS nkey seeds (a credentials file's secret half).
  [/\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, censor],
  [/\bS[UAOCNP][A-Z2-7]{54,}/g, censor],
];
const textShapeSources = [
  "gw_live_[0-9A-Za-z]{8}",
  "\\bBearer\\s",
  "\\bBasic\\s",
  ':\\/\\/[^\\s/?#@"\\\\]+@',
  "[?&;](?:api[-_]?key|key|token|access[-_]?token|secret|client[-_]?secret|password|auth|sig|signature)=",
  "\\b(?:sk-|tvly-|jina_|gsk_|xai-|hf_|AIza)[A-Za-z0-9_-]{16}",
  "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ",
  "\\bS[UAOCNP][A-Z2-7]{54}",
];
const namesSource = `(?:${nameInJson})"\\s*[:,]`;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/**
 * The forms a secret takes in a line: as is, JSON-escaped, percent-encoded, and inside any base64
 * or base64url text (a Basic header, a token wrapping it): for each of the three alignments, the
 * run of base64 characters that depends on the secret's bytes alone.
 */
export function secretForms(secret: string): string[] {
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]);
  const bytes = Buffer.from(secret, "utf8");
  for (let skip = 0; skip < 3; skip++) {
    const aligned = bytes.subarray(skip, skip + Math.floor((bytes.length - skip) / 3) * 3);
    const core = aligned.toString("base64");
    if (core.length < 12) continue;
    forms.add(core);
    forms.add(aligned.toString("base64url"));
  }
  return [...forms];
}

/** Secrets shorter than this would censor ordinary words. */
const minSecretLength = 8;

export class Redactor {
  private readonly secrets = new Set<string>();
  private literals: RegExp | undefined;
  /** Anything in a line worth a closer look: a secret, a credential shape or a sensitive name. */
  private suspect = new RegExp([...textShapeSources, namesSource].join("|"), "i");
  /** The same for one string value: a secret or a credential shape. */
  private suspectText = new RegExp(textShapeSources.join("|"), "i");

  constructor(secrets: Iterable<string | undefined | null> = []) {
    this.add(secrets);
  }

  /** Adds secrets to censor from now on; told once at start, so rebuilding the patterns is fine. */
  add(secrets: Iterable<string | undefined | null>): void {
    let added = false;
    for (const secret of secrets) {
      if (typeof secret !== "string" || secret.length < minSecretLength || this.secrets.has(secret)) continue;
      this.secrets.add(secret);
      added = true;
    }
    if (!added) return;
    // Longest first, so a secret containing another is censored whole.
    const forms = [...new Set([...this.secrets].flatMap(secretForms))].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.literals = new RegExp(forms.join("|"), "g");
    this.suspect = new RegExp([...forms, ...textShapeSources, namesSource].join("|"), "i");
    this.suspectText = new RegExp([...forms, ...textShapeSources].join("|"), "i");
  }

  /** One serialised pino line (JSON and a newline) in, the same line with every credential censored out. */
  line(line: string): string {
    if (!this.suspect.test(line)) return line;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return this.text(line);
    }
    return `${JSON.stringify(this.value(parsed))}\n`;
  }

  /** A string with every secret and credential shape in it censored. */
  text(s: string): string {
    if (!this.suspectText.test(s)) return s;
    let out = this.literals ? s.replace(this.literals, censor) : s;
    for (const [pattern, replacement] of shapes) out = out.replace(pattern, replacement);
    return out;
  }

  /** Any parsed JSON value, censored at every depth; a new value, the input is left alone. */
  value(v: unknown): unknown {
    if (typeof v === "string") return this.text(v);
    if (Array.isArray(v)) {
      // Header pairs (["x-api-key", "…"]) name their secret in the element before it.
      return v.map((item, i) => {
        const before: unknown = v[i - 1];
        if (typeof before === "string" && typeof item === "string" && isSensitiveName(before)) return censor;
        return this.value(item);
      });
    }
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [name, item] of Object.entries(v)) {
        const carries = typeof item === "string" || (item !== null && typeof item === "object");
        out[this.text(name)] = carries && isSensitiveName(name) ? censor : this.value(item);
      }
      return out;
    }
    return v;
  }
}
