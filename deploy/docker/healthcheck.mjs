// Container health check: exits 0 when the service's /readyz answers 200 within 2 s, else 1.
// The slim Node image has no curl or wget; Node is already there. Usage:
//   node healthcheck.mjs <name of the env variable holding the port>
// so an operator who changes the port (PORT=9000) keeps a working check without rebuilding.
const portVar = process.argv[2];
const port = portVar ? process.env[portVar] : undefined;
if (!port || !/^\d+$/.test(port)) {
  console.error(`healthcheck: ${portVar ?? "(no variable named)"} does not hold a port`);
  process.exit(1);
}
try {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
