import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from "@opentelemetry/api";
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from "./attributes";
import { tracer } from "./state";

/**
 * The GenAI semantic conventions' attribute names (still "development" status upstream, so they
 * are spelled here rather than imported from the incubating entry point, which may rename them).
 */
export const genAiAttributes = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
} as const;

export interface GenAiAttempt {
  /** `gen_ai.operation.name`: chat, text_completion, embeddings, … */
  operation: string;
  /** The provider's name in the configuration file. */
  provider: string;
  /** The public model the caller asked for. */
  requestModel: string;
  /** The provider's model this attempt calls. */
  upstreamModel: string;
  /** The provider's base URL, for `server.address` and `server.port`. */
  baseUrl?: string;
}

export interface GenAiAttemptEnd {
  usage?: { input_tokens?: number; output_tokens?: number };
  /** Set when the attempt failed: a low-cardinality name of the failure. */
  errorType?: string;
  errorMessage?: string;
}

export interface GenAiAttemptSpan {
  /** Runs the attempt in the span's context, so the upstream request carries its `traceparent`. */
  run<T>(attempt: () => T): T;
  end(outcome: GenAiAttemptEnd): void;
}

/**
 * A CLIENT span for one upstream attempt, named `{operation} {model}` as the GenAI conventions
 * say, a child of the active context (the inference request's span). Only called when tracing is
 * enabled.
 */
export function startGenAiAttemptSpan(attempt: GenAiAttempt, parent: Context = context.active()): GenAiAttemptSpan {
  const span = tracer().startSpan(
    `${attempt.operation} ${attempt.requestModel}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [genAiAttributes.operationName]: attempt.operation,
        [genAiAttributes.providerName]: attempt.provider,
        [genAiAttributes.requestModel]: attempt.requestModel,
        "gw.upstream_model": attempt.upstreamModel,
        ...serverAttributes(attempt.baseUrl),
      },
    },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  let ended = false;
  return {
    run: (run) => context.with(ctx, run),
    end(outcome) {
      if (ended) return;
      ended = true;
      finish(span, attempt, outcome);
    },
  };
}

function finish(span: Span, attempt: GenAiAttempt, outcome: GenAiAttemptEnd): void {
  if (outcome.errorType !== undefined) {
    span.setAttribute(ATTR_ERROR_TYPE, outcome.errorType);
    span.setStatus({ code: SpanStatusCode.ERROR, ...(outcome.errorMessage ? { message: outcome.errorMessage } : {}) });
  } else {
    span.setAttribute(genAiAttributes.responseModel, attempt.upstreamModel);
  }
  const usage = outcome.usage;
  if (usage?.input_tokens !== undefined) span.setAttribute(genAiAttributes.inputTokens, usage.input_tokens);
  if (usage?.output_tokens !== undefined) span.setAttribute(genAiAttributes.outputTokens, usage.output_tokens);
  span.end();
}

function serverAttributes(baseUrl: string | undefined): Record<string, string | number> {
  if (!baseUrl) return {};
  try {
    const url = new URL(baseUrl);
    const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
    return { [ATTR_SERVER_ADDRESS]: url.hostname, [ATTR_SERVER_PORT]: port };
  } catch {
    return {};
  }
}

/**
 * The events of a streamed answer, unchanged, calling `done` once the stream ends, fails or is
 * abandoned: a streamed attempt's span lasts as long as its stream, whose end knows the usage.
 */
export async function* untilStreamEnds<E>(events: AsyncIterable<E>, done: (error?: unknown) => void): AsyncIterable<E> {
  let failure: unknown;
  try {
    yield* events;
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    done(failure);
  }
}
