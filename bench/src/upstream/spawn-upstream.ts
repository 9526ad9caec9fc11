import { fileURLToPath } from "node:url";
import { spawnListening } from "../listening-child";
import { statsPath, type FixedUpstreamOptions } from "./fixed-upstream";

/** How the benchmark's upstream streams: `pieces` content chunks, one frame every `frameIntervalMs`. */
export interface StreamPace {
  pieces: number;
  frameIntervalMs: number;
}

/**
 * A short answer streamed at a steady token rate: 24 frames (role, 20 content, finish, usage, [DONE])
 * over 115 ms. Real providers are slower; the pace only has to be steady and far above the
 * gateway's per-chunk cost, so that a chunk held back or bunched by the gateway shows.
 */
export const defaultStreamPace: Readonly<StreamPace> = { pieces: 20, frameIntervalMs: 5 };

export interface UpstreamProcess {
  /** OpenAI-style base URL, ending in /v1. */
  readonly url: string;
  readonly pid: number;
  /** The pace of streamed answers. */
  readonly stream: Readonly<StreamPace>;
  /** Chat requests the upstream has answered so far. */
  answered(): Promise<number>;
  /** SIGTERM, then the exit code once it has exited. */
  stop(): Promise<number | null>;
}

/**
 * Starts upstream-main.ts as a child process and resolves once it is listening. A provider runs on
 * another machine, so the direct path must cross a process boundary too, as the gateway's hops do;
 * and later load scenarios must not share the load generator's event loop with the upstream.
 */
export async function spawnUpstream(options: FixedUpstreamOptions): Promise<UpstreamProcess> {
  const stream: StreamPace = {
    pieces: options.streamPieces ?? defaultStreamPace.pieces,
    frameIntervalMs: options.frameIntervalMs ?? defaultStreamPace.frameIntervalMs,
  };
  const entry = fileURLToPath(new URL("./upstream-main.ts", import.meta.url));
  const child = await spawnListening(entry, {
    BENCH_UPSTREAM_KEY: options.apiKey,
    BENCH_STREAM_PIECES: String(stream.pieces),
    BENCH_FRAME_INTERVAL_MS: String(stream.frameIntervalMs),
  });
  const url = child.url;
  return {
    url,
    pid: child.pid,
    stream,
    async answered() {
      const res = await fetch(new URL(statsPath, url));
      return ((await res.json()) as { answered: number }).answered;
    },
    stop: child.stop,
  };
}
