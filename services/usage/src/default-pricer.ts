import type { GatewayConfig } from "@gw/config";
import { createPricer } from "@gw/pricing";
import type { Pricer } from "./pricing";

/** The gateway's pricer: the configuration's prices, else genai-prices' (see @gw/pricing). */
export function defaultPricer(gateway: GatewayConfig): Pricer {
  return createPricer(gateway);
}
