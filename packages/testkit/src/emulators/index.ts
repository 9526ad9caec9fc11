export { startOpenAIUpstream, openAIError } from "./openai-upstream";
export type { OpenAIUpstreamOptions } from "./openai-upstream";
export { startAnthropicUpstream, anthropicErrorType, ANTHROPIC_VERSIONS } from "./anthropic-upstream";
export type { AnthropicUpstreamOptions } from "./anthropic-upstream";
export type { EmulatorOptions, RecordedRequest, ScriptStep, UpstreamEmulator } from "./http-emulator";
// Building blocks for further fake upstreams (Tavily, rerank…): same control surface for free.
export { Exchange, startEmulator } from "./http-emulator";
export type { ProviderSpec } from "./http-emulator";
export { startCohereUpstream } from "./cohere-upstream";
export type { CohereUpstreamOptions } from "./cohere-upstream";
export { startJinaUpstream } from "./jina-upstream";
export type { JinaUpstreamOptions } from "./jina-upstream";
export { rankDocuments, relevanceScore } from "./rerank-scores";
export { speechBytes } from "./openai-audio";
export { TINY_PNG_BASE64 } from "./openai-images";
export { startMistralUpstream, type MistralUpstreamOptions } from "./mistral-upstream";
