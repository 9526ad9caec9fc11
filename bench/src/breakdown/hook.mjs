// Loaded into each service with --import when the breakdown scenario runs (never otherwise). It
// times, from Node's and undici's own diagnostics channels, each request the service serves: from
// its start to the service's call to the next hop, the wait for that hop's answer, and from the
// answer to the end of the service's own response. A call is given to the newest request still
// without one, so it is exact only with one request in flight at a time, which is how it is used.
// Each SIGUSR2 writes the rows since the previous one to `${BENCH_BREAKDOWN_PREFIX}${pid}-${n}.json`.
import { subscribe } from "node:diagnostics_channel";
import { renameSync, writeFileSync } from "node:fs";

const prefix = process.env.BENCH_BREAKDOWN_PREFIX;
const micros = () => Number(process.hrtime.bigint() / 1000n);
/** Requests being served, oldest first; a hop's call and answer go to the newest that awaits one. */
const open = [];
let rows = [];
let dumps = 0;

subscribe("http.server.request.start", ({ response }) => {
  open.push({ response, start: micros(), call: undefined, answer: undefined });
});
const called = () => {
  const request = open.findLast((r) => r.call === undefined);
  if (request) request.call = micros();
};
const answered = () => {
  const request = open.findLast((r) => r.call !== undefined && r.answer === undefined);
  if (request) request.answer = micros();
};
subscribe("http.client.request.start", called);
subscribe("undici:request:create", called);
subscribe("http.client.response.finish", answered);
subscribe("undici:request:headers", answered);
subscribe("http.server.response.finish", ({ response }) => {
  const at = open.findIndex((r) => r.response === response);
  if (at < 0) return;
  const [{ start, call, answer }] = open.splice(at, 1);
  if (call === undefined || answer === undefined) return; // answered without a hop (health, errors)
  rows.push([call - start, answer - call, micros() - answer]);
});

if (prefix) {
  process.on("SIGUSR2", () => {
    const file = `${prefix}${process.pid}-${dumps++}.json`;
    // Written whole under another name first, so the reader never sees half a file.
    writeFileSync(`${file}.tmp`, JSON.stringify(rows));
    renameSync(`${file}.tmp`, file);
    rows = [];
  });
}
