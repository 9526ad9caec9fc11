import type { RawAnswer } from "./raw-http";
import type { Envelope } from "./route-table";

/** Reading answers: the two error envelopes, and what an error in them says. */

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** `upstream_unavailable` in either envelope (Anthropic's calls it `overloaded_error`). */
export function saysUnavailable(envelope: unknown): boolean {
  if (!isRecord(envelope) || !isRecord(envelope.error)) return false;
  return envelope.error.code === "upstream_unavailable" || (envelope.type === "error" && envelope.error.type === "overloaded_error");
}

/** A job error in either envelope that says the server, not the request, failed. */
export function isServerError(error: unknown): boolean {
  const type = isRecord(error) && isRecord(error.error) ? error.error.type : undefined;
  return typeof type === "string" && ["server_error", "api_error", "overloaded_error", "timeout_error"].includes(type);
}

/** What is wrong with a refusal's body, if anything: it must be JSON in the expected envelope (either, when undefined). */
export function envelopeProblem(answer: Extract<RawAnswer, { kind: "answer" }>, expected: Envelope | undefined): string | undefined {
  const type = String(answer.headers["content-type"] ?? "");
  if (!/^application\/json/i.test(type)) return `content-type ${JSON.stringify(type)}, body ${bodyText(answer.body)}`;
  const body = parseJson(answer.body);
  if (body === undefined) return `body is not JSON: ${bodyText(answer.body)}`;
  const isOpenAI = isOpenAIEnvelope(body);
  const isAnthropic = isAnthropicEnvelope(body);
  if (expected === "openai" && !isOpenAI) return `not OpenAI's envelope: ${bodyText(answer.body)}`;
  if (expected === "anthropic" && !isAnthropic) return `not Anthropic's envelope: ${bodyText(answer.body)}`;
  if (!isOpenAI && !isAnthropic) return `neither envelope: ${bodyText(answer.body)}`;
  return undefined;
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const stringOrNull = (v: unknown) => typeof v === "string" || v === null;

function isOpenAIEnvelope(body: unknown): boolean {
  if (!isRecord(body) || !isRecord(body.error)) return false;
  const e = body.error;
  return typeof e.message === "string" && typeof e.type === "string" && "param" in e && stringOrNull(e.param) && "code" in e && stringOrNull(e.code);
}

function isAnthropicEnvelope(body: unknown): boolean {
  return isRecord(body) && body.type === "error" && isRecord(body.error) && typeof body.error.type === "string" && typeof body.error.message === "string";
}

export function bodyText(body: Buffer): string {
  const text = body.toString("utf8");
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
