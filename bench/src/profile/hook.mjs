// Loaded into each service with --import through BENCH_SERVICE_NODE_OPTIONS (Node refuses
// --cpu-prof in NODE_OPTIONS), only when asked: it runs V8's sampling profiler in the main thread
// from the start and writes the profile when the process exits, as
// `${BENCH_PROFILE_DIR}/<checkout>.<service>.<pid>.cpuprofile`, the checkout named by its folder so
// that the two meshes of a --baseline run can be told apart. `diff.ts` compares two of them.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { basename } from "node:path";

const dir = process.env.BENCH_PROFILE_DIR;
const script = process.argv[1] ?? "";
const at = script.lastIndexOf("/services/");
if (dir && at >= 0) {
  const checkout = basename(script.slice(0, at)) || "root";
  const service = script.slice(at + "/services/".length).split("/")[0];
  const session = new Session();
  session.connect();
  session.post("Profiler.enable");
  const interval = Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 100);
  session.post("Profiler.setSamplingInterval", { interval });
  session.post("Profiler.start");
  // A session in the process's own thread answers at once, so this works in an exit listener.
  process.once("exit", () => {
    session.post("Profiler.stop", (err, result) => {
      // The interval goes with the samples, so diff.ts knows what one stands for.
      if (!err) writeFileSync(`${dir}/${checkout}.${service}.${process.pid}.cpuprofile`, JSON.stringify({ ...result.profile, samplingIntervalUs: interval }));
    });
  });
}
