import { describe, expect, it } from "vitest";
import { Sealer } from "./sealed";

describe("Sealer", () => {
  const sealer = new Sealer("master-key-for-tests-0123456789", "credentials");

  it("when a value is sealed, then it opens to the same text, and the sealed form does not contain it", () => {
    const sealed = sealer.seal("sk-live-secret", "ws_1/openai");
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain("sk-live-secret");
    expect(sealer.open(sealed, "ws_1/openai")).toBe("sk-live-secret");
    expect(sealer.seal("sk-live-secret", "ws_1/openai")).not.toBe(sealed); // a fresh IV each time
  });

  it("when the key, the purpose, the context or any byte differs, then it does not open", () => {
    const sealed = sealer.seal("sk-live-secret", "ws_1/openai");
    expect(new Sealer("another-master-key-0123456789", "credentials").open(sealed, "ws_1/openai")).toBeUndefined();
    expect(new Sealer("master-key-for-tests-0123456789", "transit").open(sealed, "ws_1/openai")).toBeUndefined();
    expect(sealer.open(sealed, "ws_2/openai")).toBeUndefined();
    const parts = sealed.split(".");
    const flipped = `${parts[0]}.${parts[1]}.${parts[2]}.${(parts[3] as string).startsWith("A") ? "B" : "A"}${(parts[3] as string).slice(1)}`;
    expect(sealer.open(flipped, "ws_1/openai")).toBeUndefined();
    expect(sealer.open("not sealed")).toBeUndefined();
  });
});
