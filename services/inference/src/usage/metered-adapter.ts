import type { GatewayError } from "@gw/errors";
import { startGenAiAttemptSpan, tracingEnabled, untilStreamEnds } from "@gw/telemetry";
import type { ProviderAdapter, ProviderContext, RelayedStreamEvent, UpstreamCall } from "../providers/types";
import { type CallMeter, fromAnthropicUsage, fromOpenAIUsage } from "./call-meter";

/**
 * The adapter as the fallback loop sees it, with each operation's answer read into the call's
 * meter (`ctx.meter`) in the provider's own terms: a JSON answer's usage at once, a stream's as its
 * events pass (nothing is buffered; each event is handed on as it came). One place for every
 * operation, so an adapter never has to know about the ledger. Made once per adapter: the meter
 * travels in the context, so a call costs no wrapper of its own.
 */
export function meteredAdapter(adapter: ProviderAdapter): ProviderAdapter {
  let out = metered.get(adapter);
  if (!out) {
    out = wrap(adapter);
    metered.set(adapter, out);
  }
  return out;
}

const metered = new WeakMap<ProviderAdapter, ProviderAdapter>();

type Op<C, T> = (ctx: ProviderContext, call: C) => Promise<T>;

/** `op` metered as `operation`, its answer read by `read`; unmetered when the context has no meter. */
function meter<C extends UpstreamCall<unknown>, T extends Attempted>(
  operation: string,
  op: Op<C, T>,
  read?: (meter: CallMeter, r: T) => T,
  before?: (meter: CallMeter, call: C) => void,
): Op<C, T> {
  return (ctx, call) => {
    const m = ctx.meter;
    if (!m) return op(ctx, call);
    before?.(m, call);
    return timed(m, ctx, call, operation, op, read);
  };
}

type OpenAIStyleEvent = { type: string; usage?: Parameters<typeof fromOpenAIUsage>[0] };
type OpenAIStyleResult =
  | { ok: false }
  | { ok: true; kind: "json"; completion: { usage?: Parameters<typeof fromOpenAIUsage>[0] | null } }
  | { ok: true; kind: "stream"; events: AsyncIterable<OpenAIStyleEvent> };

/** Chat and text completions report usage alike: on the JSON answer, or in a stream's usage event. */
function readOpenAIStyle<R extends OpenAIStyleResult>(m: CallMeter, r: R): R {
  if (!r.ok) return r;
  if (r.kind === "json") {
    if (r.completion.usage) m.tokens(fromOpenAIUsage(r.completion.usage));
    return r;
  }
  return { ...r, events: tap(m, r.events, (e) => e.type === "usage" && e.usage && m.tokens(fromOpenAIUsage(e.usage))) };
}

function readMessages(m: CallMeter, r: Awaited<ReturnType<NonNullable<ProviderAdapter["messages"]>>>) {
  if (!r.ok) return r;
  if (r.kind === "json") {
    m.tokens(fromAnthropicUsage(r.message.usage));
    return r;
  }
  return {
    ...r,
    events: tap(m, r.events, (e) => {
      if (e.type !== "event") return;
      // message_start carries the input side; message_delta the running output count (and,
      // from newer API versions, the input side again, which is the same numbers).
      if (e.event.type === "message_start") m.tokens(fromAnthropicUsage((e.event.message as { usage?: object }).usage ?? {}));
      else if (e.event.type === "message_delta") m.tokens(fromAnthropicUsage((e.event as { usage?: object }).usage ?? {}));
    }),
  };
}

function readEmbeddings(m: CallMeter, r: Awaited<ReturnType<NonNullable<ProviderAdapter["embeddings"]>>>) {
  if (r.ok && r.response.usage) m.tokens({ input_tokens: r.response.usage.prompt_tokens });
  return r;
}

function readRerank(m: CallMeter, r: Awaited<ReturnType<NonNullable<ProviderAdapter["rerank"]>>>) {
  if (!r.ok) return r;
  const billed = r.response.meta?.billed_units;
  if (r.response.usage) m.tokens({ input_tokens: r.response.usage.total_tokens });
  if (typeof billed?.search_units === "number") m.unit("search_units", billed.search_units);
  return r;
}

function readImages(m: CallMeter, r: Awaited<ReturnType<NonNullable<ProviderAdapter["imageGenerations"]>>>) {
  if (!r.ok) return r;
  if (r.kind === "json") {
    if (r.response.usage) m.tokens(fromResponsesStyleUsage(r.response.usage));
    m.unit("images", r.response.data?.length ?? 0);
    return r;
  }
  return { ...r, events: tapRelayed(m, r.events, "images") };
}

function readTranscriptions(m: CallMeter, r: Awaited<ReturnType<NonNullable<ProviderAdapter["transcriptions"]>>>) {
  if (!r.ok) return r;
  if (r.kind === "json") {
    readTranscriptionUsage(m, r.body as { usage?: unknown; duration?: unknown });
    return r;
  }
  if (r.kind === "stream") return { ...r, events: tapRelayed(m, r.events) };
  return r;
}

function readOcr(m: CallMeter, r: Awaited<ReturnType<NonNullable<ProviderAdapter["ocr"]>>>) {
  if (r.ok) m.unit("pages", r.response.usage_info.pages_processed);
  return r;
}

function wrap(adapter: ProviderAdapter): ProviderAdapter {
  const out: ProviderAdapter = {};
  if (adapter.chat) out.chat = meter("chat", adapter.chat, readOpenAIStyle);
  if (adapter.completions) out.completions = meter("text_completion", adapter.completions, readOpenAIStyle);
  if (adapter.messages) out.messages = meter("chat", adapter.messages, readMessages);
  if (adapter.embeddings) out.embeddings = meter("embeddings", adapter.embeddings, readEmbeddings);
  if (adapter.rerank) out.rerank = meter("rerank", adapter.rerank, readRerank);
  if (adapter.imageGenerations) out.imageGenerations = meter("generate_content", adapter.imageGenerations, readImages);
  // Speech is billed by the characters of its input (or by tokens, which it does not report).
  if (adapter.speech) out.speech = meter("speech", adapter.speech, undefined, (m, call) => m.unit("characters", [...call.request.input].length));
  if (adapter.transcriptions) out.transcriptions = meter("transcription", adapter.transcriptions, readTranscriptions);
  if (adapter.ocr) out.ocr = meter("ocr", adapter.ocr, readOcr);
  return out;
}

/**
 * Counts the attempt and its time until the answer (or a stream's headers) is in, then lets `read`
 * see the answer. `operation` is the attempt's `gen_ai.operation.name` (the GenAI metrics' names).
 */
function timed<C extends UpstreamCall<unknown>, T extends Attempted>(
  meter: CallMeter,
  ctx: ProviderContext,
  call: C,
  operation: string,
  op: Op<C, T>,
  read?: (meter: CallMeter, r: T) => T,
): Promise<T> {
  meter.attemptStart(ctx.name, call.upstreamModel);
  if (!tracingEnabled()) {
    // One reaction for the attempt's end and the read: `finally` then `then` queued four
    // microtasks and four promises on every call.
    return op(ctx, call).then(
      (r) => {
        meter.attemptEnd();
        return read ? read(meter, r) : r;
      },
      (err: unknown) => {
        meter.attemptEnd();
        throw err;
      },
    );
  }
  // The call starts inside the attempt's span, so the upstream request carries it as its parent.
  return traced(meter, ctx, call, operation, () => op(ctx, call).finally(() => meter.attemptEnd()), read);
}

type Attempted = { ok: true; events?: AsyncIterable<unknown> } | { ok: false; error: GatewayError };

/**
 * The attempt as a CLIENT span under the request's: it ends with the answer, or with the stream
 * when there is one (only the stream's end knows the usage).
 */
function traced<T extends Attempted>(
  meter: CallMeter,
  ctx: ProviderContext,
  call: UpstreamCall<unknown>,
  operation: string,
  attempt: () => Promise<T>,
  read: ((meter: CallMeter, r: T) => T) | undefined,
): Promise<T> {
  const span = startGenAiAttemptSpan({
    operation,
    provider: ctx.name,
    requestModel: call.publicModel,
    upstreamModel: call.upstreamModel,
    baseUrl: ctx.config.base_url,
  });
  const usage = () => meter.outcome().usage;
  return span
    .run(attempt)
    .then((r) => (read ? read(meter, r) : r))
    .then(
      (r) => {
        if (!r.ok) span.end({ errorType: r.error.code, errorMessage: r.error.message });
        else if (r.events) return { ...r, events: untilStreamEnds(r.events, (err) => span.end({ usage: usage(), ...(err ? failure(err) : {}) })) };
        else span.end({ usage: usage() });
        return r;
      },
      (err: unknown) => {
        span.end(failure(err));
        throw err;
      },
    );
}

function failure(err: unknown): { errorType: string; errorMessage?: string } {
  if (!(err instanceof Error)) return { errorType: "Error" };
  // undici's errors name their kind in `code` (UND_ERR_HEADERS_TIMEOUT, ECONNREFUSED, …).
  const code = (err as { code?: unknown }).code;
  return { errorType: typeof code === "string" ? code : err.name, errorMessage: err.message };
}

/** Hands every event on unchanged, letting `read` see it first; times the first event and the stream. */
async function* tap<E>(meter: CallMeter, events: AsyncIterable<E>, read: (event: E) => unknown): AsyncIterable<E> {
  const started = performance.now();
  try {
    for await (const event of events) {
      meter.firstEvent();
      read(event);
      yield event;
    }
  } finally {
    meter.streamEnd(started);
  }
}

/**
 * Relayed streams (images, transcriptions) carry usage inside their events' data, in the
 * Responses style; a completed image event counts one image.
 */
function tapRelayed(meter: CallMeter, events: AsyncIterable<RelayedStreamEvent>, countImages?: "images"): AsyncIterable<RelayedStreamEvent> {
  let images = 0;
  return tap(meter, events, (e) => {
    if (e.type !== "event" || !e.data.includes('"usage"')) return;
    let data: { type?: unknown; usage?: unknown };
    try {
      data = JSON.parse(e.data) as typeof data;
    } catch {
      return;
    }
    const kind = typeof data.type === "string" ? data.type : (e.event ?? "");
    if (countImages && kind.endsWith(".completed")) meter.unit("images", ++images);
    if (countImages) {
      if (isObject(data.usage)) meter.tokens(fromResponsesStyleUsage(data.usage));
    } else {
      readTranscriptionUsage(meter, data);
    }
  });
}

function readTranscriptionUsage(meter: CallMeter, body: { usage?: unknown; duration?: unknown }): void {
  const usage = isObject(body.usage) ? body.usage : undefined;
  if (usage?.type === "tokens") meter.tokens(fromResponsesStyleUsage(usage));
  else if (usage?.type === "duration" && typeof usage.seconds === "number") meter.unit("audio_seconds", usage.seconds);
  else if (typeof body.duration === "number") meter.unit("audio_seconds", body.duration);
}

/** `{input_tokens, output_tokens, input_tokens_details.cached_tokens, output_tokens_details.reasoning_tokens}`. */
function fromResponsesStyleUsage(u: Record<string, unknown>): Parameters<CallMeter["tokens"]>[0] {
  const inDetails = isObject(u.input_tokens_details) ? u.input_tokens_details : {};
  const outDetails = isObject(u.output_tokens_details) ? u.output_tokens_details : {};
  return {
    input_tokens: intOf(u.input_tokens),
    output_tokens: intOf(u.output_tokens),
    cached_input_tokens: intOf(inDetails.cached_tokens),
    reasoning_tokens: intOf(outDetails.reasoning_tokens),
  };
}

function intOf(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
