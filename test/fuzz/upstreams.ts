import {
  startAnthropicUpstream,
  startCohereUpstream,
  startJinaUpstream,
  startMistralUpstream,
  startOpenAIUpstream,
  startSerpApiUpstream,
  startTavilyUpstream,
  type RecordedRequest,
  type UpstreamEmulator,
} from "@gw/testkit";
import { testPlans } from "../e2e/targets";

/**
 * Every provider kind the public routes reach, as emulators, and a config that gives every route a
 * model or tool on them: no route is left unconfigured, so no 503 is ever legitimate in the fuzz.
 */
const KEYS = {
  oa: "sk-fuzz-oa",
  ant: "sk-ant-fuzz",
  co: "co-fuzz",
  jina: "jina_fuzz",
  mis: "mis-fuzz",
  tav: "tvly-fuzz",
  serp: "serp-fuzz",
};
type Name = keyof typeof KEYS;

export interface Upstreams {
  /** Provider configuration and models, to put in the gateway's config file. */
  configYaml: string;
  /** The provider credentials the config names. */
  env: Record<string, string>;
  /** Requests the emulators received since the last `reset`. */
  received(): RecordedRequest[];
  reset(): void;
  close(): Promise<void>;
}

export async function startUpstreams(): Promise<Upstreams> {
  const up: Record<Name, UpstreamEmulator> = {
    oa: await startOpenAIUpstream({ apiKey: KEYS.oa }),
    ant: await startAnthropicUpstream({ apiKey: KEYS.ant }),
    co: await startCohereUpstream({ apiKey: KEYS.co }),
    jina: await startJinaUpstream({ apiKey: KEYS.jina }),
    mis: await startMistralUpstream({ apiKey: KEYS.mis }),
    // Research tasks finish at their first read, so an accepted research job settles quickly.
    tav: await startTavilyUpstream({ apiKey: KEYS.tav, research: { pendingPolls: 0, inProgressPolls: 0 } }),
    serp: await startSerpApiUpstream({ apiKey: KEYS.serp }),
  };
  const all = Object.values(up);
  const configYaml = `
providers:
  oa:       { kind: openai,    base_url: "${up.oa.url}",   api_key_env: FUZZ_OA }
  ant:      { kind: anthropic, base_url: "${up.ant.url}",  api_key_env: FUZZ_ANT }
  co:       { kind: cohere,    base_url: "${up.co.url}",   api_key_env: FUZZ_CO }
  jina:     { kind: jina,      base_url: "${up.jina.url}", api_key_env: FUZZ_JINA }
  mis:      { kind: mistral,   base_url: "${up.mis.url}",  api_key_env: FUZZ_MIS }
  webtool:  { kind: tavily,    base_url: "${up.tav.url}",  api_key_env: FUZZ_TAV, timeout_ms: 5000, max_retries: 0 }
  serptool: { kind: serpapi,   base_url: "${up.serp.url}", api_key_env: FUZZ_SERP, timeout_ms: 5000, max_retries: 0 }
models:
  gpt:      { type: chat,          routes: [{ provider: oa, model: gpt-4o-mini }] }
  claude:   { type: chat,          routes: [{ provider: ant, model: claude-sonnet-4-5 }] }
  mistral:  { type: chat,          routes: [{ provider: mis, model: mistral-small-latest }] }
  instruct: { type: completion,    routes: [{ provider: oa, model: gpt-3.5-turbo-instruct }] }
  embed-oa: { type: embedding,     routes: [{ provider: oa, model: text-embedding-3-small }] }
  embed-co: { type: embedding,     routes: [{ provider: co, model: embed-v4.0 }] }
  rr-co:    { type: rerank,        routes: [{ provider: co, model: rerank-v3.5 }] }
  rr-jina:  { type: rerank,        routes: [{ provider: jina, model: jina-reranker-v2-base-multilingual }] }
  image:    { type: image,         routes: [{ provider: oa, model: gpt-image-1 }] }
  tts:      { type: speech,        routes: [{ provider: oa, model: tts-1 }] }
  stt:      { type: transcription, routes: [{ provider: oa, model: whisper-1 }] }
  ocr:      { type: ocr,           routes: [{ provider: mis, model: mistral-ocr-latest }] }
${testPlans}`;
  return {
    configYaml,
    env: {
      FUZZ_OA: KEYS.oa,
      FUZZ_ANT: KEYS.ant,
      FUZZ_CO: KEYS.co,
      FUZZ_JINA: KEYS.jina,
      FUZZ_MIS: KEYS.mis,
      FUZZ_TAV: KEYS.tav,
      FUZZ_SERP: KEYS.serp,
    },
    received: () => all.flatMap((u) => u.requests),
    reset: () => {
      for (const u of all) u.reset();
    },
    close: async () => {
      await Promise.all(all.map((u) => u.close()));
    },
  };
}
