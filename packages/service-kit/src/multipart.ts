import { TranscriptionForm } from "@gw/contracts";
import { fromZodError, GatewayError } from "@gw/errors";
import { Response } from "undici";

/** A form's file as undici parses it (Node's own File, which the global `File` type is not). */
export type UploadedFile = import("node:buffer").File;

/** A transcription request: its fields checked, and every entry kept in order for the upstream. */
export interface TranscriptionUpload {
  form: TranscriptionForm;
  entries: ReadonlyArray<readonly [name: string, value: string | UploadedFile]>;
}

/**
 * Parses a transcription form (already read whole, within the body limit) and checks its fields:
 * a missing or malformed `file` or `model` is a 400 naming that field.
 */
export async function readTranscriptionForm(contentType: string | undefined, body: unknown): Promise<TranscriptionUpload> {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new GatewayError("invalid_request", "Invalid body: expected multipart/form-data with `file` and `model` fields");
  }
  let form: Awaited<ReturnType<Response["formData"]>>;
  try {
    form = await new Response(Buffer.isBuffer(body) ? body : Buffer.alloc(0), { headers: { "content-type": contentType } }).formData();
  } catch {
    throw new GatewayError("invalid_request", "Invalid body: not valid multipart/form-data");
  }
  const entries = [...form.entries()];
  const parsed = TranscriptionForm.safeParse(Object.fromEntries(entries));
  if (!parsed.success) throw fromZodError(parsed.error);
  return { form: parsed.data, entries };
}
