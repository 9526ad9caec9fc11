import type { z } from "zod";
import type { AnthropicErrorEnvelope, ErrorFormat, OpenAIErrorEnvelope } from "@gw/contracts";
import { errorCodes, type ErrorCode } from "./codes";

export interface GatewayErrorOptions {
  param?: string | null;
  /** Overrides the table's status (e.g. an upstream 4xx passed through with its own status). */
  status?: number;
  /** Overrides the envelope's `type` (e.g. "tokens" vs "requests" on a rate-limit 429). */
  type?: string;
  headers?: Record<string, string>;
  /** True when the caller (or a fallback loop) may try again: 429, 502, 503, 504. */
  retryable?: boolean;
  cause?: unknown;
}

/** The one error type of the gateway: a code from the table, a message safe to show the caller. */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  readonly status: number;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly retryable: boolean;
  readonly type: string | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: GatewayErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.status = options.status ?? errorCodes[code].status;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
    this.type = options.type;
    this.retryable = options.retryable ?? [429, 502, 503, 504].includes(this.status);
  }

  toEnvelope(format: "openai"): OpenAIErrorEnvelope;
  toEnvelope(format: "anthropic", requestId?: string): AnthropicErrorEnvelope;
  toEnvelope(format: ErrorFormat, requestId?: string): OpenAIErrorEnvelope | AnthropicErrorEnvelope;
  toEnvelope(format: ErrorFormat, requestId?: string): OpenAIErrorEnvelope | AnthropicErrorEnvelope {
    const row = errorCodes[this.code];
    if (format === "anthropic") {
      const envelope: AnthropicErrorEnvelope = {
        type: "error",
        error: { type: this.type && this.status !== 429 ? this.type : anthropicTypeFor(this.status, row), message: this.message },
      };
      if (requestId) envelope.request_id = requestId;
      return envelope;
    }
    return { error: { message: this.message, type: this.type ?? row.openai, param: this.param, code: this.code } };
  }
}

/** The code's own type; when the status was overridden (an upstream 4xx passed through), the type for that status. */
function anthropicTypeFor(status: number, row: { status: number; anthropic: string }): string {
  if (status === row.status) return row.anthropic;
  const byStatus: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
  };
  return byStatus[status] ?? row.anthropic;
}

/** A zod failure on a request body: 400 naming the first offending field, as OpenAI does. */
export function fromZodError(error: z.ZodError, where = "body"): GatewayError {
  const issue = error.issues[0];
  const param = issue && issue.path.length > 0 ? formatPath(issue.path) : null;
  const message = issue ? `Invalid ${where}: ${param ? `${param}: ` : ""}${issue.message}` : `Invalid ${where}`;
  return new GatewayError("invalid_request", message, { param });
}

/** ["messages", 0, "content"] → "messages[0].content" */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}

/** OpenAI's `{error: {type}}` or Anthropic's `{type: "error", error: {type}}`: both keep it in `error.type`. */
export function errorTypeOf(envelope: unknown): string | undefined {
  const type = (envelope as { error?: { type?: unknown } } | undefined)?.error?.type;
  return typeof type === "string" && type.length > 0 && type.length <= 100 ? type : undefined;
}
