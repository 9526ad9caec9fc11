import { benchModel } from "../gateway/start-gateway";
import { createLatencyHistogram, encodeHistogram, percentileDifference, summarize, type Histogram, type LatencySummary } from "../histogram";
import { interleaveBlocks } from "../interleave";
import { formatMs, type Table } from "../report";
import { createStreamClient, type StreamTiming } from "../sse-timing";
import { chatPaths, streamingChatTargets, type ChatPath } from "../targets";
import { answerText, chatCompletionFrames, upstreamModelName } from "../upstream/payloads";
import type { BenchContext, Json, Scenario, ScenarioResult } from "./scenario";

/**
 * Each stream lasts as long as the upstream's pace makes it (about 120 ms by default), so the
 * counts are capped well below the JSON scenario's: 2 × (180 + 40) streams take under a minute.
 * Smaller --requests, --warmup or --block still apply.
 */
const maxRequests = 180;
const maxWarmup = 40;
const maxBlock = 25;

/** What a stream's timings go into, per path. */
interface StreamHistograms {
  firstEvent: Histogram;
  gap: Histogram;
  total: Histogram;
  /** Gaps far shorter than the upstream's pace: events held back and then read together. */
  bunched: number;
}

/**
 * Streaming: the same streamed chat request (include_usage on) straight to the upstream and
 * through the gateway, one at a time, in alternating blocks. The upstream sends every frame at a
 * fixed pace, so on both paths the time to the first event shows the cost of setting the stream
 * up, and the gaps between events show whether each chunk is relayed as it comes (a gap near the
 * pace) or held back (a long gap followed by a near-zero one).
 */
export const streaming: Scenario = {
  name: "streaming",
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const requests = Math.min(ctx.flags.requests, maxRequests);
    const warmup = Math.min(ctx.flags.warmup, maxWarmup);
    const block = Math.min(ctx.flags.block, maxBlock);
    const pace = ctx.upstream.stream;
    const expectedEvents = chatCompletionFrames(pace.pieces, true).length;
    const bunchedBelowMicros = pace.frameIntervalMs * 200; // a fifth of the pace
    const targets = streamingChatTargets(ctx.chat);
    const clients = byPath((path) => createStreamClient(targets[path]));
    const expected = byPath((path) => ({ events: expectedEvents, model: path === "gateway" ? benchModel : upstreamModelName }));
    const streamOnce = async (path: ChatPath): Promise<StreamTiming> => {
      const timing = await clients[path].timed();
      const problem = checkChatStream(timing.data, expected[path]);
      if (problem) throw new Error(`streaming, ${path}: ${problem}\n${timing.data.join("\n").slice(0, 2000)}`);
      return timing;
    };

    try {
      ctx.progress(`streaming: warm-up, ${warmup} streams per path (${expectedEvents} events, one every ${pace.frameIntervalMs} ms)`);
      for (const { path, count } of interleaveBlocks(chatPaths, warmup, block)) {
        for (let i = 0; i < count; i++) await streamOnce(path);
      }

      ctx.progress(`streaming: ${requests} streams per path in blocks of ${block}`);
      const histograms = byPath(
        (): StreamHistograms => ({ firstEvent: createLatencyHistogram(), gap: createLatencyHistogram(), total: createLatencyHistogram(), bunched: 0 }),
      );
      const answeredBefore = await ctx.upstream.answered();
      const started = process.hrtime.bigint();
      for (const { path, count } of interleaveBlocks(chatPaths, requests, block)) {
        const h = histograms[path];
        for (let i = 0; i < count; i++) {
          const timing = await streamOnce(path);
          h.firstEvent.recordValue(timing.firstEventMicros);
          h.total.recordValue(timing.totalMicros);
          for (const gap of timing.gapsMicros) {
            h.gap.recordValue(gap);
            if (gap < bunchedBelowMicros) h.bunched++;
          }
        }
      }
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      // Every gateway stream must have come from the upstream: no error path, cache or shortcut.
      const reached = (await ctx.upstream.answered()) - answeredBefore;
      if (reached !== chatPaths.length * requests) {
        throw new Error(`streaming: upstream answered ${reached} requests, expected ${chatPaths.length * requests}`);
      }

      const summary = byPath((path) => ({
        firstEvent: rounded(summarize(histograms[path].firstEvent)),
        gap: rounded(summarize(histograms[path].gap)),
        total: rounded(summarize(histograms[path].total)),
      }));
      const difference = {
        firstEvent: roundedDifference(summary.gateway.firstEvent, summary.direct.firstEvent),
        gap: roundedDifference(summary.gateway.gap, summary.direct.gap),
        total: roundedDifference(summary.gateway.total, summary.direct.total),
      };
      const bunched = byPath((path) => histograms[path].bunched);
      const gapsPerPath = requests * (expectedEvents - 1);
      const notes = chatPaths.flatMap((path) =>
        bunched[path] > 0
          ? [
              `${path}: ${bunched[path]} of ${gapsPerPath} events came less than ${formatMs(bunchedBelowMicros / 1000)} ms after the one before (${path === "direct" ? "a busy machine held them back" : "held back by a hop, or by a busy machine as on direct"})`,
            ]
          : [],
      );
      return {
        name: "streaming",
        tables: [streamingTable(summary, difference, bunched, { requests, warmup, block, events: expectedEvents, intervalMs: pace.frameIntervalMs })],
        notes,
        data: {
          requestsPerPath: requests,
          warmupPerPath: warmup,
          blockSize: block,
          durationMs: Math.round(durationMs),
          upstream: { contentChunks: pace.pieces, frameIntervalMs: pace.frameIntervalMs, eventsPerStream: expectedEvents },
          firstEventMs: byPath((path) => summary[path].firstEvent),
          gapMs: byPath((path) => summary[path].gap),
          totalMs: byPath((path) => summary[path].total),
          gatewayMinusDirectMs: difference,
          bunchedGaps: { ...bunched, belowMs: bunchedBelowMicros / 1000, ofPerPath: gapsPerPath },
          histogramsMicros: byPath((path) => ({
            firstEvent: encodeHistogram(histograms[path].firstEvent),
            gap: encodeHistogram(histograms[path].gap),
            total: encodeHistogram(histograms[path].total),
          })),
        } satisfies Json,
      };
    } finally {
      await Promise.all(chatPaths.map((path) => clients[path].close()));
    }
  },
};

/**
 * Why a streamed chat answer is not the benchmark's fixed one, or undefined when it is: exactly
 * `events` events (role chunk, content chunks, finish chunk, usage chunk, `[DONE]`), every chunk
 * naming `model`, and the content adding up to the fixed text. A gateway that drops, merges or
 * renames chunks is then caught on every stream, not only on a first check.
 */
export function checkChatStream(data: readonly string[], expected: { events: number; model: string }): string | undefined {
  if (data.length !== expected.events) return `${data.length} events, expected ${expected.events}`;
  if (data.at(-1) !== "[DONE]") return `the last event is not [DONE]`;
  const chunks: ChunkShape[] = [];
  for (const [i, text] of data.slice(0, -1).entries()) {
    let chunk: ChunkShape;
    try {
      chunk = JSON.parse(text) as ChunkShape;
    } catch {
      return `event ${i} is not JSON`;
    }
    if (chunk.object !== "chat.completion.chunk") return `event ${i} is a ${String(chunk.object)}`;
    if (chunk.model !== expected.model) return `event ${i} names model ${String(chunk.model)}, expected ${expected.model}`;
    chunks.push(chunk);
  }
  if (chunks[0]?.choices?.[0]?.delta?.role !== "assistant") return "the first chunk does not open the assistant's message";
  const usageChunk = chunks.at(-1);
  if (usageChunk?.choices?.length !== 0 || typeof usageChunk.usage?.total_tokens !== "number") return "the last chunk is not the usage chunk";
  if (chunks.at(-2)?.choices?.[0]?.finish_reason !== "stop") return "the chunk before the usage chunk does not finish the message";
  const content = chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("");
  if (content !== answerText) return `the content differs from the fixed answer: ${JSON.stringify(content.slice(0, 200))}`;
  return undefined;
}

interface ChunkShape {
  object?: unknown;
  model?: unknown;
  choices?: { delta?: { role?: string; content?: string | null }; finish_reason?: string | null }[];
  usage?: { total_tokens?: unknown } | null;
}

function byPath<T>(make: (path: ChatPath) => T): Record<ChatPath, T> {
  return { direct: make("direct"), gateway: make("gateway") };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

function rounded(s: LatencySummary): LatencySummary {
  return { count: s.count, p50: round3(s.p50), p90: round3(s.p90), p99: round3(s.p99), max: round3(s.max), mean: round3(s.mean) };
}

function roundedDifference(a: LatencySummary, b: LatencySummary): Record<"p50" | "p90" | "p99", number> {
  const d = percentileDifference(a, b);
  return { p50: round3(d.p50), p90: round3(d.p90), p99: round3(d.p99) };
}

type PathSummary = Record<"firstEvent" | "gap" | "total", LatencySummary>;
type Difference = Record<"firstEvent" | "gap" | "total", Record<"p50" | "p90" | "p99", number>>;

function streamingTable(
  summary: Record<ChatPath, PathSummary>,
  difference: Difference,
  bunched: Record<ChatPath, number>,
  run: { requests: number; warmup: number; block: number; events: number; intervalMs: number },
): Table {
  const row = (label: string, s: PathSummary, bunchedGaps: number) => [
    label,
    formatMs(s.firstEvent.p50),
    formatMs(s.firstEvent.p99),
    formatMs(s.gap.p50),
    formatMs(s.gap.p99),
    formatMs(s.total.p50),
    formatMs(s.total.p99),
    bunchedGaps,
  ];
  const signed = (d: Record<"p50" | "p99", number>) => [formatMs(d.p50, true), formatMs(d.p99, true)];
  return {
    title:
      `streaming, one stream in flight: ${run.requests} per path, blocks of ${run.block}, after ${run.warmup} warm-up; ` +
      `${run.events} events per stream, one every ${run.intervalMs} ms from the upstream (ms)`,
    columns: ["path", "first event p50", "p99", "gap p50", "p99", "end p50", "p99", "bunched gaps"],
    rows: [
      row("direct", summary.direct, bunched.direct),
      row("gateway", summary.gateway, bunched.gateway),
      ["gateway − direct", ...signed(difference.firstEvent), ...signed(difference.gap), ...signed(difference.total), ""],
    ],
  };
}
