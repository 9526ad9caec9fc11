import { describe, expect, it } from "vitest";
import type { JobEvent } from "@gw/contracts";
import type { FinishedJob } from "./job-store";
import { jobBodies } from "./job-usage";

/** A finished job's bodies for its workspace's detailed logs. */
const job: FinishedJob = {
  workspace_id: "ws_1",
  key_id: "key_1",
  route: "audio/speech",
  request_id: "req_1",
  created_at: new Date(1_700_000_000_000),
  completed_at: new Date(1_700_000_001_000),
  request: JSON.stringify({ format: "json", body: { model: "tts", input: "say sk-secret-123", voice: "alloy" } }),
  capture_days: 7,
};
const finished = (extra: Partial<JobEvent>): JobEvent => ({ job_id: "job_1", status: "completed", attempt: 1, at: 1, ...extra });

describe("when a finished job's bodies are kept for its workspace's detailed logs", () => {
  it("then its request and result are kept, with secrets redacted", () => {
    const bodies = jobBodies(job, finished({ result: { text: "heard sk-secret-123" } }), ["sk-secret-123"]);
    expect(bodies).toMatchObject({ request_id: "req_1", workspace_id: "ws_1", retention_days: 7 });
    expect(bodies?.request.text).toContain("say ");
    expect(bodies?.request.text).not.toContain("sk-secret-123");
    expect(bodies?.response?.text).toContain("heard ");
    expect(bodies?.response?.text).not.toContain("sk-secret-123");
  });

  it("then a result held apart for its size is noted with its size, not read into the log", () => {
    const bodies = jobBodies(job, finished({ result_stored: { bytes: 26_666_668 } }));
    expect(bodies?.response).toEqual({ text: "[a result of 26666668 bytes, kept with the job, not in the log]", truncated: false, bytes: 26_666_668 });
  });

  it("then nothing is kept for a workspace that keeps no detailed logs", () => {
    expect(jobBodies({ ...job, capture_days: null }, finished({ result: {} }))).toBeUndefined();
  });
});
