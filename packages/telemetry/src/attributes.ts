/**
 * The stable OpenTelemetry attribute names the request path sets (HTTP, error and server
 * conventions), spelled here rather than imported: the conventions package is a megabyte of
 * constants to load in a process that never traces. startTracing, which only runs with tracing on,
 * takes what it needs from @opentelemetry/semantic-conventions itself.
 */
export const ATTR_HTTP_REQUEST_METHOD = "http.request.method";
export const ATTR_HTTP_ROUTE = "http.route";
export const ATTR_HTTP_RESPONSE_STATUS_CODE = "http.response.status_code";
export const ATTR_ERROR_TYPE = "error.type";
export const ATTR_SERVER_ADDRESS = "server.address";
export const ATTR_SERVER_PORT = "server.port";

/** The gateway's request id (`x-request-id`), to go from a span to the logs and the usage ledger. */
export const ATTR_GW_REQUEST_ID = "gw.request_id";
