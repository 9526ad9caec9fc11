/**
 * The OpenAPI 3.1 document of the public API, generated from the zod contracts.
 *
 * Generated with zod 4's own `z.toJSONSchema`, not a zod-to-OpenAPI library: OpenAPI 3.1's schema
 * dialect is JSON Schema 2020-12, which is what it emits, so a registry of the contract schemas gives
 * the components and their `$ref`s directly, with no dependency to keep. Of the libraries that add
 * operation builders on top (zod-openapi, whose newest major needs Node 22 while 5.x takes 20;
 * @asteasolutions/zod-to-openapi 9), either would be a dependency for what zod now does itself, and
 * the operations are a small table of our own anyway, checked against ingress's route table.
 * Kept apart from @gw/contracts because it reads the error-code table of @gw/errors, which itself
 * depends on the contracts.
 */
export { buildApiDocument, type ApiDocumentOptions } from "./document";
export { publicOperations, type Operation } from "./operations";
export { buildComponents } from "./components";
