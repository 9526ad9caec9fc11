import { createHash } from "node:crypto";
import { AdmissionAnswer, AdmissionClaims, admissionHeader, admissionPurpose, type AdmissionRequest } from "@gw/contracts";
import { SignedClaims } from "@gw/service-kit";
import { Agent, request } from "undici";
import type { Admit } from "./batch-runner";

/** An admission call that takes longer than this is given up on; the step is tried again. */
const ADMISSION_TIMEOUT_MS = 10_000;

/**
 * Asks ingress's admin port (`POST /internal/admissions`) to admit a batch's lines: the one place
 * that holds the key's limits and budgets, so a batch counts against them as live calls do. The
 * call is signed with the internal secret for the batch's workspace and this very body.
 */
export function admissionClient(ingressAdminUrl: () => string, internalSecret: string): Admit {
  const claims = new SignedClaims(AdmissionClaims, internalSecret, admissionPurpose);
  const agent = new Agent({ headersTimeout: ADMISSION_TIMEOUT_MS, bodyTimeout: ADMISSION_TIMEOUT_MS, keepAliveTimeout: 30_000 });
  return async (ask: AdmissionRequest) => {
    const body = JSON.stringify(ask);
    const signature = claims.sign({ workspace_id: ask.workspace_id, body_sha256: createHash("sha256").update(body).digest("hex") });
    const res = await request(`${ingressAdminUrl()}/internal/admissions`, {
      method: "POST",
      headers: { "content-type": "application/json", [admissionHeader]: signature },
      body,
      dispatcher: agent,
    });
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      throw new Error(`ingress answered ${res.statusCode} to a batch admission: ${text.slice(0, 300)}`);
    }
    return AdmissionAnswer.parse(await res.body.json());
  };
}
