import { z } from "zod";
import { Limits, PlanName } from "./identity";
import { canonicalZone } from "./zoned-time";

/** Model allow-list entries: "*" or names with "*" globs. */
const ModelPatterns = z
  .array(
    z
      .string()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9._:/*@-]+$/, "model names and globs only"),
  )
  .max(500);
export const toolNames = ["webtool", "serptool"] as const;
const ToolList = z.array(z.enum(toolNames)).max(toolNames.length);

/**
 * A monthly spend ceiling on a workspace or a key. `hard`: a request whose worst-case cost no longer
 * fits is refused (429 `insufficient_quota`); `soft`: requests go on and only the alerts fire.
 * `alert_at_percent`: one alert per month when spend crosses it (and one when the budget is reached).
 */
export const Budget = z.strictObject({
  monthly_usd: z.number().positive().max(1_000_000_000).multipleOf(0.01, "whole cents"),
  mode: z.enum(["hard", "soft"]),
  alert_at_percent: z.number().int().min(1).max(99).optional(),
});
export type Budget = z.infer<typeof Budget>;

/**
 * An IANA time zone name (`Europe/Berlin`, `UTC`) as Intl knows it, kept in its canonical spelling
 * (`europe/berlin` becomes `Europe/Berlin`); a workspace's months and days are counted in it.
 */
export const TimeZoneName = z
  .string()
  .refine((name) => canonicalZone(name) !== undefined, { message: "an IANA time zone name, e.g. Europe/Berlin or UTC" })
  .transform((name) => canonicalZone(name) ?? name);

/** How long captured bodies are kept, in days: at least a day, at most the ledger's default retention. */
export const MAX_BODY_RETENTION_DAYS = 400;

/**
 * Detailed logs (the Enterprise plan's): whether request and answer bodies are captured for the
 * workspace's requests, and how many days they are kept. Off by default.
 */
export const WorkspaceLogging = z.strictObject({
  bodies: z.boolean(),
  retention_days: z.number().int().min(1).max(MAX_BODY_RETENTION_DAYS).default(30),
});
export type WorkspaceLogging = z.infer<typeof WorkspaceLogging>;

/** A key can only turn its workspace's capture off for its own requests. */
export const KeyLogging = z.strictObject({ bodies: z.literal(false) });
export type KeyLogging = z.infer<typeof KeyLogging>;

export const SubscriptionStatus = z.enum(["active", "canceled"]);
export const KeyStatus = z.enum(["active", "disabled", "revoked"]);
export type KeyStatus = z.infer<typeof KeyStatus>;

export const CreateWorkspaceBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  plan: PlanName,
  models: ModelPatterns.optional(),
  tools: ToolList.optional(),
  limits: Limits.optional(),
  timezone: TimeZoneName.optional(),
  budget: Budget.optional(),
  logging: WorkspaceLogging.optional(),
});
export type CreateWorkspaceBody = z.infer<typeof CreateWorkspaceBody>;

export const PatchWorkspaceBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200).optional(),
    plan: PlanName.optional(),
    subscription: SubscriptionStatus.optional(),
    models: ModelPatterns.optional(),
    tools: ToolList.optional(),
    limits: Limits.optional(),
    timezone: TimeZoneName.optional(),
    /** Replaces the budget; null removes it. */
    budget: Budget.nullable().optional(),
    logging: WorkspaceLogging.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: "at least one field is required" });
export type PatchWorkspaceBody = z.infer<typeof PatchWorkspaceBody>;

export const CreateKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  models: ModelPatterns.optional(),
  tools: ToolList.optional(),
  limits: Limits.optional(),
  budget: Budget.optional(),
  logging: KeyLogging.optional(),
});
export type CreateKeyBody = z.infer<typeof CreateKeyBody>;

/**
 * Any of status, name and limits. `limits` replaces the key's whole limits object (`{}` clears the
 * overrides); each value must stay within the workspace's effective limit, which the admin API checks.
 */
export const PatchKeyBody = z
  .strictObject({
    status: KeyStatus.optional(),
    name: z.string().trim().min(1).max(200).optional(),
    limits: Limits.optional(),
    /** Replaces the key's budget; null removes it. */
    budget: Budget.nullable().optional(),
    /** `{bodies: false}` keeps this key's requests out of detailed logs; null follows the workspace again. */
    logging: KeyLogging.nullable().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: "at least one field is required" });
export type PatchKeyBody = z.infer<typeof PatchKeyBody>;

export const Workspace = z.object({
  id: z.string(),
  object: z.literal("workspace"),
  name: z.string(),
  plan: PlanName,
  subscription: SubscriptionStatus,
  models: z.array(z.string()),
  tools: z.array(z.string()),
  limits: Limits,
  timezone: z.string(),
  budget: Budget.nullable(),
  logging: z.object({ bodies: z.boolean(), retention_days: z.number().int() }),
  created_at: z.number().int(),
  updated_at: z.number().int(),
});
export type Workspace = z.infer<typeof Workspace>;

export const ApiKey = z.object({
  id: z.string(),
  object: z.literal("api_key"),
  workspace_id: z.string(),
  name: z.string().nullable(),
  prefix: z.string(),
  status: KeyStatus,
  models: z.array(z.string()).nullable(),
  tools: z.array(z.string()).nullable(),
  limits: Limits,
  budget: Budget.nullable(),
  logging: KeyLogging.nullable(),
  /** The console user who created the key; null for keys made with the admin token. */
  created_by: z.string().nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
});
export type ApiKey = z.infer<typeof ApiKey>;

/** Only the creation answer carries the secret. */
export const CreatedApiKey = ApiKey.extend({ key: z.string().startsWith("gw_live_") });
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

export const ApiKeyList = z.object({ object: z.literal("list"), data: z.array(ApiKey) });
export const WorkspaceList = z.object({ object: z.literal("list"), data: z.array(Workspace) });

/** An enterprise workspace's own provider credential; it is stored sealed and never returned. */
export const PutProviderCredentialBody = z.strictObject({ api_key: z.string().trim().min(8).max(4096) });
export type PutProviderCredentialBody = z.infer<typeof PutProviderCredentialBody>;

/** What the admin API says of a registered credential: which provider, and when; never the key. */
export const ProviderCredential = z.object({
  object: z.literal("provider_credential"),
  workspace_id: z.string(),
  provider: z.string(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
});
export type ProviderCredential = z.infer<typeof ProviderCredential>;
