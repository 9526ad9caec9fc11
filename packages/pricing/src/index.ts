export * from "./types";
export { createPricer } from "./pricer";
export { addUsd, formatUsd, parseDecimal, toPicoUsd, USD_DECIMALS, type Decimal } from "./usd";
export { configPriceVersion } from "./config-price";
export { GENAI_PRICES_VERSION, libraryProviderId, libraryProviderIds } from "./library-price";
