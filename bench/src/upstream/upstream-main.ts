import { startFixedUpstream } from "./fixed-upstream";

/**
 * The fixed upstream as its own process: prints one JSON line `{"url": …}` once listening and
 * closes on SIGTERM. Keeps the upstream off the load generator's event loop and CPU accounting.
 * Settings come from the environment: BENCH_UPSTREAM_KEY (required), BENCH_STREAM_PIECES,
 * BENCH_FRAME_INTERVAL_MS.
 */
const apiKey = process.env.BENCH_UPSTREAM_KEY;
if (!apiKey) {
  process.stderr.write("BENCH_UPSTREAM_KEY is required\n");
  process.exit(2);
}
const upstream = await startFixedUpstream({
  apiKey,
  streamPieces: optionalNumber(process.env.BENCH_STREAM_PIECES),
  frameIntervalMs: optionalNumber(process.env.BENCH_FRAME_INTERVAL_MS),
});
process.stdout.write(`${JSON.stringify({ url: upstream.url })}\n`);
process.once("SIGTERM", () => {
  void upstream.close().then(() => process.exit(0));
});

function optionalNumber(raw: string | undefined): number | undefined {
  return raw === undefined || raw === "" ? undefined : Number(raw);
}
