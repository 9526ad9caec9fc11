import { File } from "node:buffer";
import { Response } from "undici";
import { describe, expect, it } from "vitest";
import type { TranscriptionUpload } from "../types";
import { encodeForm } from "./audio";

const audio = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 31) & 0xff));

describe("encodeForm", () => {
  it("when a form is re-encoded, then the file bytes, name and type survive, fields keep their order, and only the model changes", async () => {
    const upload: TranscriptionUpload = {
      form: { file: new Blob([audio]), model: "stt" },
      entries: [
        ["model", "stt"],
        ["file", new File([audio], "a.mp3", { type: "audio/mpeg" })],
        ["timestamp_granularities[]", "word"],
        ["timestamp_granularities[]", "segment"],
        ["chunking_strategy[type]", "server_vad"],
      ],
    };
    const { body, contentType } = await encodeForm(upload, "gpt-4o-transcribe");
    expect(contentType).toMatch(/^multipart\/form-data; boundary=/);
    const parsed = await new Response(body, { headers: { "content-type": contentType } }).formData();
    expect([...parsed.keys()]).toEqual(["model", "file", "timestamp_granularities[]", "timestamp_granularities[]", "chunking_strategy[type]"]);
    expect(parsed.get("model")).toBe("gpt-4o-transcribe");
    expect(parsed.getAll("timestamp_granularities[]")).toEqual(["word", "segment"]);
    const file = parsed.get("file") as unknown as File;
    expect(file.name).toBe("a.mp3");
    expect(file.type).toBe("audio/mpeg");
    expect(Buffer.from(await file.arrayBuffer()).equals(audio)).toBe(true);
  });

  it("when encoded twice (a retry), then both bodies carry the same form", async () => {
    const upload: TranscriptionUpload = {
      form: { file: new Blob([audio]), model: "m" },
      entries: [
        ["file", new File([audio], "a.wav")],
        ["model", "m"],
      ],
    };
    for (let i = 0; i < 2; i++) {
      const { body, contentType } = await encodeForm(upload, "x");
      const file = (await new Response(body, { headers: { "content-type": contentType } }).formData()).get("file") as unknown as File;
      expect(Buffer.from(await file.arrayBuffer()).equals(audio)).toBe(true);
    }
  });
});
