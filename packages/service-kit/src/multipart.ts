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
  const entries = await readFormEntries(contentType, body, "`file` and `model` fields");
  const parsed = TranscriptionForm.safeParse(Object.fromEntries(entries));
  if (!parsed.success) throw fromZodError(parsed.error);
  return { form: parsed.data, entries };
}

/**
 * A multipart form's entries in order (read whole, within the body limit); a body that is not a
 * form is a 400 saying which fields the route expects.
 */
export async function readFormEntries(
  contentType: string | undefined,
  body: unknown,
  expected: string,
): Promise<Array<[name: string, value: string | UploadedFile]>> {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new GatewayError("invalid_request", `Invalid body: expected multipart/form-data with ${expected}`);
  }
  try {
    const form = await new Response(Buffer.isBuffer(body) ? body : Buffer.alloc(0), { headers: { "content-type": contentType } }).formData();
    return [...form.entries()];
  } catch {
    throw new GatewayError("invalid_request", "Invalid body: not valid multipart/form-data");
  }
}
