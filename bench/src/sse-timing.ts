import { finished } from "node:stream/promises";
import { Pool } from "undici";
import { microsSince } from "./histogram";
import type { RequestTarget } from "./http-client";

/** When each event of one streamed answer arrived, and what it said. */
export interface StreamTiming {
  /** µs from sending the request to the arrival of the first complete SSE event. */
  firstEventMicros: number;
  /** Whole µs between each event's arrival and the previous one's (0 when they came in one read): one fewer than `data`. */
  gapsMicros: number[];
  /** µs from sending the request to the end of the body. */
  totalMicros: number;
  /** The data of every event, in arrival order (`[DONE]` included). */
  data: string[];
}

export interface StreamClient {
  /** Sends the request and reads the stream to its end; throws unless it was a 200 with at least one event. */
  timed(): Promise<StreamTiming>;
  close(): Promise<void>;
}

/**
 * A keep-alive undici pool, like the JSON client, that stamps each body read as it arrives. An
 * event is stamped when the read that completes it arrives, so events a hop bunched into one
 * write share a stamp and show as a zero gap. Parsing and checking the events is left to the
 * caller, after the stream has ended, so it never delays the next stamp.
 */
export function createStreamClient(target: RequestTarget): StreamClient {
  const pool = new Pool(target.origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const options = { method: "POST", path: target.path, headers: target.headers, body: target.body } as const;

  return {
    async timed() {
      const started = process.hrtime.bigint();
      const res = await pool.request(options);
      if (res.statusCode !== 200) {
        const text = await res.body.text();
        throw new Error(`${target.origin}${target.path} answered ${res.statusCode}: ${text.slice(0, 500)}`);
      }
      const splitter = new SseSplitter();
      const data: string[] = [];
      const arrivals: bigint[] = [];
      res.body.on("data", (part: Buffer) => {
        const now = process.hrtime.bigint();
        for (const event of splitter.push(part)) {
          data.push(event);
          arrivals.push(now);
        }
      });
      await finished(res.body);
      const totalMicros = microsSince(started);
      const first = arrivals[0];
      if (first === undefined) throw new Error(`${target.origin}${target.path}: the stream ended without an event`);
      const gapsMicros = arrivals.slice(1).map((at, i) => Math.round(Number(at - (arrivals[i] as bigint)) / 1000));
      return { firstEventMicros: microsSince(started, first), gapsMicros, totalMicros, data };
    },
    close: () => pool.close(),
  };
}

/**
 * Splits an SSE byte stream into the data of its events, across reads. Data-only framing as
 * OpenAI sends it (`data: …` lines, a blank line after each event); comment lines and events
 * without data (keep-alives) are skipped, multi-line data is joined with "\n" as the spec says.
 */
export class SseSplitter {
  private readonly decoder = new TextDecoder();
  private pending = "";
  /** A "\r" that ended the last read: it may be the first half of "\r\n". */
  private carry = "";

  push(part: Uint8Array): string[] {
    let text = this.carry + this.decoder.decode(part, { stream: true });
    this.carry = text.endsWith("\r") ? "\r" : "";
    if (this.carry) text = text.slice(0, -1);
    this.pending += text.replace(/\r\n?/g, "\n");
    const events: string[] = [];
    let end = this.pending.indexOf("\n\n");
    while (end !== -1) {
      const data = dataOf(this.pending.slice(0, end));
      if (data !== undefined) events.push(data);
      this.pending = this.pending.slice(end + 2);
      end = this.pending.indexOf("\n\n");
    }
    return events;
  }
}

function dataOf(block: string): string | undefined {
  const lines = block
    .split("\n")
    .filter((line) => line === "data" || line.startsWith("data:"))
    .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
  return lines.length > 0 ? lines.join("\n") : undefined;
}
