import type { GatewayConfig, ModelConfig, ModelType } from "@gw/config";
import type { Identity, ModelEntry } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { allowedByAll } from "./patterns";

/** The public model catalog from the config file, seen through a caller's allow-lists. */
export class Catalog {
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly config: GatewayConfig) {}

  list(identity: Identity): ModelEntry[] {
    return Object.keys(this.config.models)
      .filter((name) => allowedByAll(identity.models, name))
      .map((id) => this.entry(id));
  }

  get(identity: Identity, name: string): ModelEntry {
    this.require(identity, name);
    return this.entry(name);
  }

  /** The model a request names, checked against the caller's access and the route's model type. */
  resolve(identity: Identity, name: string, type: ModelType): ModelConfig {
    const model = this.require(identity, name);
    if (model.type !== type) {
      throw new GatewayError("invalid_request", `The model \`${name}\` is a ${model.type} model and cannot serve this route`, {
        param: "model",
      });
    }
    return model;
  }

  private require(identity: Identity, name: string): ModelConfig {
    const model = Object.hasOwn(this.config.models, name) ? this.config.models[name] : undefined;
    if (!model || !allowedByAll(identity.models, name)) {
      // Same answer for "no such model" and "not yours", as OpenAI gives: the list is private.
      throw new GatewayError("model_not_found", `The model \`${name}\` does not exist or you do not have access to it`, {
        param: "model",
      });
    }
    return model;
  }

  private entry(id: string): ModelEntry {
    return { id, object: "model", created: this.created, owned_by: "gateway" };
  }
}
