import type { JsonSchema } from "./json-schema";

/** The OpenAI-style limit headers, on every answer of a call that counts against the rate limits. */
export const rateLimitHeaders = [
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-tokens",
] as const;

/** `x-ratelimit-limit-requests` → `RatelimitLimitRequests`: the header's component. */
export function headerComponentName(name: string): string {
  return name.replace(/(^|-)(\w)/g, (_m, _dash: string, ch: string) => ch.toUpperCase()).replace(/^X(?=[A-Z])/, "");
}

export const headerRef = (component: string): JsonSchema => ({ $ref: `#/components/headers/${component}` });

/** The rate-limit headers as a response's `headers`. */
export function rateLimitHeaderRefs(): JsonSchema {
  return Object.fromEntries(rateLimitHeaders.map((name) => [name, headerRef(headerComponentName(name))]));
}

export const headerComponents: Record<string, JsonSchema> = {
  RequestId: { description: "The request's id: quote it to the operator (it names the request in the gateway's logs).", schema: { type: "string" } },
  RetryAfter: { description: "Seconds to wait before trying again.", schema: { type: "integer" } },
  RetryAfterMs: { description: "Milliseconds to wait before trying again (what the OpenAI and Anthropic SDKs prefer).", schema: { type: "integer" } },
  ShouldRetry: {
    description: '"false" when retrying cannot help (the request can never fit the limit, or the provider\'s quota is spent).',
    schema: { type: "string", enum: ["false"] },
  },
  IdempotentReplayed: {
    description: '"true" when the Idempotency-Key matched an earlier job, which is answered again.',
    schema: { type: "string", enum: ["true"] },
  },
  PreferenceApplied: { description: "`wait=N` when the poll waited (up to N seconds) for the job to finish, as `Prefer` asked.", schema: { type: "string" } },
  PollAfter: { description: "While the job runs: seconds to wait before polling again (2, growing with the job's age up to 30).", schema: { type: "integer" } },
  ...Object.fromEntries(
    rateLimitHeaders.map((name) => {
      const [, , what, dimension] = name.split("-");
      const text =
        what === "reset"
          ? `Time until the ${dimension} window has room again, e.g. \`1s\` or \`6m0s\`.`
          : `The ${what === "limit" ? "limit" : "remainder"} of ${dimension} per minute (the tighter of the key's and the workspace's).`;
      return [headerComponentName(name), { description: text, schema: { type: what === "reset" ? "string" : "integer" } }];
    }),
  ),
};
