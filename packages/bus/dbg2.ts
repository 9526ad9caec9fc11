import { connect } from "nats";
import { createNatsBus } from "./src/nats-bus";
import { createRecordingLogger, deferred, jobWork, waitFor } from "./src/bus-testing";
import { streamNameOf } from "./src/nats-setup";
const admin = await connect({ servers: "nats://127.0.0.1:4222" });
const jsm = await admin.jetstreamManager();
for (const what of ["stream", "consumer"]) {
  const ns = `dbgy${Date.now().toString(36)}`;
  const logger = createRecordingLogger();
  const bus = await createNatsBus({ url: "nats://127.0.0.1:4222", namespace: ns, logger });
  const got: string[] = [];
  const hold = deferred();
  await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => { got.push(m.job_id); if (got.length === 1) await hold.promise; });
  await bus.enqueue("jobs.work.tools", jobWork("first"), { msgId: "first" });
  await waitFor(() => got.length === 1, "first");
  if (what === "stream") await jsm.streams.delete(streamNameOf(ns)); else await jsm.consumers.delete(streamNameOf(ns), "tools_jobs_work_tools");
  hold.resolve();
  const t = Date.now();
  await bus.enqueue("jobs.work.tools", jobWork("again"), { msgId: "again" });
  try { await waitFor(() => got.length >= 2, "job", 40_000); console.log(what, "ok", Date.now() - t); }
  catch {
    const ci = await jsm.consumers.info(streamNameOf(ns), "tools_jobs_work_tools").catch(e => String(e)); console.log(JSON.stringify(typeof ci === "string" ? ci : {p: ci.num_pending, a: ci.num_ack_pending, w: ci.num_waiting, d: ci.delivered, r: ci.num_redelivered, cfg: ci.config, created: ci.created}));
    const si = await jsm.streams.info(streamNameOf(ns)); console.log(JSON.stringify(si.state));
    console.log(what, "FAIL", JSON.stringify(logger.entries.map(e => [e.msg, String((e.obj.err as Error|undefined)?.message ?? "")]))); }
  await bus.close();
  await jsm.streams.delete(streamNameOf(ns)).catch(() => 0);
}
await admin.close();
