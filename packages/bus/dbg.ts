import { connect } from "nats";
import { createNatsBus } from "./src/nats-bus";
import { createRecordingLogger, jobWork, waitFor } from "./src/bus-testing";
import { streamNameOf } from "./src/nats-setup";
const admin = await connect({ servers: "nats://127.0.0.1:4222" });
const jsm = await admin.jetstreamManager();
for (let i = 0; i < 30; i++) {
  const ns = `dbgx${Date.now().toString(36)}`;
  const logger = createRecordingLogger();
  const bus = await createNatsBus({ url: "nats://127.0.0.1:4222", namespace: ns, logger });
  const got: string[] = [];
  await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => void got.push(m.job_id));
  await new Promise((r) => setTimeout(r, Math.random() * 20));
  await jsm.streams.delete(streamNameOf(ns));
  const t = Date.now();
  await bus.enqueue("jobs.work.tools", jobWork("again"), { msgId: "again" });
  try { await waitFor(() => got.length === 1, "job", 40_000); console.log(i, "ok", Date.now() - t); }
  catch { console.log(i, "FAIL", JSON.stringify(logger.entries.map(e => [Date.now()-t, e.msg, String((e.obj.err as Error|undefined)?.message ?? "")])));
    const si = await jsm.streams.info(streamNameOf(ns)).catch(e => String(e)); console.log(JSON.stringify(typeof si === "string" ? si : si.state));
    const ci = await jsm.consumers.info(streamNameOf(ns), "tools_jobs_work_tools").catch(e => String(e)); console.log(JSON.stringify(typeof ci === "string" ? ci : {p: ci.num_pending, a: ci.num_ack_pending, w: ci.num_waiting, d: ci.delivered}));
  }
  await bus.close();
  await jsm.streams.delete(streamNameOf(ns)).catch(() => 0);
}
await admin.close();
