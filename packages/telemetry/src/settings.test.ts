import { describe, expect, it } from "vitest";
import { tracingSettings } from "./settings";

describe("tracingSettings", () => {
  it("when only the general endpoint is set, then spans go to its /v1/traces", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })?.url).toBe("http://collector:4318/v1/traces");
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/base/" })?.url).toBe("http://collector:4318/base/v1/traces");
  });

  it("when the traces endpoint is set, then it is used as given, over the general one", () => {
    const settings = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://b/otlp/traces" });
    expect(settings?.url).toBe("https://b/otlp/traces");
  });

  it("when no endpoint is set, or an empty one, then tracing is off", () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "" })).toBeUndefined();
  });

  it("when headers, a service name and batch settings are given, then they are read, the traces-specific headers winning", () => {
    const settings = tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%20def, tenant=one",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "tenant=two",
      OTEL_SERVICE_NAME: "edge",
      OTEL_BSP_SCHEDULE_DELAY: "250",
    });
    expect(settings).toEqual({
      url: "http://c:4318/v1/traces",
      headers: { "x-api-key": "abc def", tenant: "two" },
      serviceName: "edge",
      batch: { scheduledDelayMillis: 250 },
    });
  });

  it("when a value is malformed or asks for gRPC, then the error names the variable", () => {
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_BSP_SCHEDULE_DELAY: "soon" })).toThrow(/OTEL_BSP_SCHEDULE_DELAY/);
  });
});
