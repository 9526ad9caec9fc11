import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** OTLP's span kinds as numbers travel in its JSON encoding. */
export const otlpSpanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** One exported span, flattened from OTLP/JSON: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer (see `otlpSpanKind`). */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The resource's `service.name`. */
  service: string;
  /** The instrumentation scope's name. */
  scope: string;
  /** When the span started, in nanoseconds since the epoch (a decimal string, as OTLP/JSON writes it). */
  startTimeUnixNano: string;
}

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

export interface OtlpReceiver {
  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds `/v1/traces`). */
  readonly url: string;
  /** Every span received so far, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Export requests that were not OTLP/JSON (a protobuf body, malformed JSON): a test can assert none. */
  readonly refused: number;
  /** Polls until `predicate` holds over the spans received (or throws after `timeoutMs`), then returns them. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/**
 * A stand-in for an OpenTelemetry collector: accepts `POST /v1/traces` in OTLP/HTTP with JSON
 * bodies (what @opentelemetry/exporter-trace-otlp-http sends) and keeps the spans for a test to read.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let refused = 0;
  const server = createServer((req, res) => {
    void receive(req, res).catch(() => {
      refused++;
      if (!res.headersSent) res.writeHead(400, { "content-type": "application/json" }).end('{"code":3,"message":"malformed"}');
    });
  });

  async function receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== "POST" || req.url?.split("?")[0] !== "/v1/traces") {
      res.writeHead(404).end();
      return;
    }
    if (!String(req.headers["content-type"] ?? "").startsWith("application/json")) {
      refused++;
      res.writeHead(415, { "content-type": "application/json" }).end('{"code":3,"message":"only OTLP/JSON is accepted here"}');
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest;
    spans.push(...flatten(body));
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get refused() {
      return refused;
    },
    async waitFor(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline) throw new Error(`the expected spans did not arrive in ${timeoutMs} ms; got: ${spans.map((s) => s.name).join(", ")}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      scope?: { name?: string };
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: KeyValue[];
        status?: { code?: number };
        startTimeUnixNano?: string | number;
      }[];
    }[];
  }[];
}

function flatten(body: ExportRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? "",
          name: span.name,
          kind: span.kind ?? 0,
          attributes: attributesOf(span.attributes),
          statusCode: span.status?.code ?? 0,
          service: String(resource["service.name"] ?? ""),
          scope: ss.scope?.name ?? "",
          startTimeUnixNano: String(span.startTimeUnixNano ?? 0),
        });
      }
    }
  }
  return out;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) out[key] = plainValue(value);
  return out;
}

/** OTLP/JSON writes 64-bit integers as strings; the tests compare numbers. */
function plainValue(value: AnyValue | undefined): AttributeValue {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plainValue);
  return undefined;
}
