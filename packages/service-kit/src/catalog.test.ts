import { GatewayConfig } from "@gw/config";
import { ModelEntry, type Identity } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { describe, expect, it } from "vitest";
import { Catalog } from "./catalog";

const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const config = GatewayConfig.parse({
  providers: {
    openai: { kind: "openai", base_url: "https://api.openai.com/v1" },
    cohere: { kind: "cohere", base_url: "https://api.cohere.com" },
  },
  models: {
    "gpt-4o-mini": { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-mini" }] },
    "gpt-4o": { type: "chat", routes: [{ provider: "openai", model: "gpt-4o-2024-08-06" }] },
    "text-embed-small": { type: "embedding", routes: [{ provider: "openai", model: "text-embedding-3-small" }] },
    "rerank-v3": { type: "rerank", routes: [{ provider: "cohere", model: "rerank-v3.5" }] },
  },
  plans: { plus: limits, pro: limits, enterprise: limits },
});

function identity(models: string[][]): Identity {
  return { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models, tools: [] };
}

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a GatewayError");
}

describe("Catalog.list", () => {
  it("when the caller may use every model, then every configured model is listed as a model entry", () => {
    const entries = new Catalog(config).list(identity([["*"]]));
    expect(entries.map((e) => e.id).sort()).toEqual(["gpt-4o", "gpt-4o-mini", "rerank-v3", "text-embed-small"]);
    for (const entry of entries) expect(ModelEntry.safeParse(entry).success).toBe(true);
  });

  it("when the workspace and the key narrow the list, then only models allowed by both are listed", () => {
    const catalog = new Catalog(config);
    expect(
      catalog
        .list(identity([["gpt-*"]]))
        .map((e) => e.id)
        .sort(),
    ).toEqual(["gpt-4o", "gpt-4o-mini"]);
    expect(catalog.list(identity([["gpt-*"], ["gpt-4o-mini", "rerank-v3"]])).map((e) => e.id)).toEqual(["gpt-4o-mini"]);
    expect(catalog.list(identity([["nothing-matches"]]))).toEqual([]);
  });

  it("when entries are listed, then they never reveal the upstream model or provider", () => {
    const text = JSON.stringify(new Catalog(config).list(identity([["*"]])));
    for (const secret of ["gpt-4o-2024-08-06", "text-embedding-3-small", "rerank-v3.5", "cohere", "openai"]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe("Catalog.get and resolve", () => {
  it("when an allowed model is asked for, then get answers its entry and resolve its config", () => {
    const catalog = new Catalog(config);
    expect(catalog.get(identity([["*"]]), "gpt-4o").id).toBe("gpt-4o");
    expect(catalog.resolve(identity([["gpt-*"]]), "gpt-4o", "chat").routes[0]?.model).toBe("gpt-4o-2024-08-06");
  });

  it("when the model does not exist or is not allowed, then both answer the same 404 model_not_found", () => {
    const catalog = new Catalog(config);
    const unknown = thrown(() => catalog.resolve(identity([["*"]]), "gpt-5-ultra", "chat"));
    const forbidden = thrown(() => catalog.resolve(identity([["gpt-*"], ["gpt-4o-mini"]]), "gpt-4o", "chat"));
    for (const err of [unknown, forbidden]) {
      expect([err.code, err.status, err.param]).toEqual(["model_not_found", 404, "model"]);
    }
    // same wording apart from the name: the caller cannot tell "missing" from "not yours"
    expect(unknown.message.replace("gpt-5-ultra", "X")).toBe(forbidden.message.replace("gpt-4o", "X"));
    expect(thrown(() => catalog.get(identity([["rerank-*"]]), "gpt-4o")).code).toBe("model_not_found");
  });

  it("when the name is an Object prototype key, then it is an unknown model, not a crash", () => {
    const catalog = new Catalog(config);
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(thrown(() => catalog.resolve(identity([["*"]]), name, "chat")).code, name).toBe("model_not_found");
    }
  });

  it("when the model serves another type than the route, then it is a 400 naming param model", () => {
    const catalog = new Catalog(config);
    const err = thrown(() => catalog.resolve(identity([["*"]]), "text-embed-small", "chat"));
    expect([err.code, err.status, err.param]).toEqual(["invalid_request", 400, "model"]);
    expect(err.message).toContain("embedding");
    expect(catalog.resolve(identity([["*"]]), "text-embed-small", "embedding").type).toBe("embedding");
  });

  it("when a model is both the wrong type and not allowed, then the answer is 404 (access is checked first)", () => {
    const catalog = new Catalog(config);
    expect(thrown(() => catalog.resolve(identity([["gpt-*"]]), "rerank-v3", "chat")).status).toBe(404);
  });
});
