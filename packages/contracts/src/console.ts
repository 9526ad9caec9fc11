import { z } from "zod";
import type { PlanName } from "./identity";
import { workspaceRoles, type WorkspaceAction, type WorkspaceRole } from "./roles";

/**
 * A person acting through the console, as the console tells the owning service (ingress's admin
 * API) in the signed `x-gw-principal` header: who (for the audit trail) and which workspace the call
 * may touch. `workspace_id` "*" is a platform operator's; the owning service still checks the scope.
 */
export const ConsolePrincipal = z.object({
  user_id: z.string().min(1),
  email: z.string().min(1),
  workspace_id: z.string().min(1),
});
export type ConsolePrincipal = z.infer<typeof ConsolePrincipal>;
export const principalHeader = "x-gw-principal";
/** What the principal header's HMAC is bound to, so no other signed header passes for it. */
export const principalPurpose = "console-principal";
/** The address ingress saw a console request come from (client-sent `x-gw-*` headers are stripped). */
export const clientAddressHeader = "x-gw-client-address";

export const WorkspaceRoleName = z.enum(workspaceRoles);
export const Email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+$/, "an email address");

/** At least 12 characters: long beats clever (NIST SP 800-63B), and no other rules. */
export const Password = z.string().min(12, "at least 12 characters").max(1024);

export const SignInBody = z.strictObject({ email: Email, password: z.string().min(1).max(1024) });
/** A single-use link's token (first sign-in, an invitation); a password set with it when given. */
export const LinkSignInBody = z.strictObject({ token: z.string().min(1).max(200), password: Password.optional(), name: z.string().trim().max(200).optional() });
export const CreateInvitationBody = z.strictObject({ email: Email, role: WorkspaceRoleName });
export const PatchMemberBody = z.strictObject({ role: WorkspaceRoleName });
export const CreateUserBody = z.strictObject({ email: Email, operator: z.boolean().default(false), name: z.string().trim().max(200).optional() });

export const ConsoleUser = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  operator: z.boolean(),
  has_password: z.boolean(),
});
export type ConsoleUser = z.infer<typeof ConsoleUser>;

export interface ConsoleMembership {
  workspace_id: string;
  workspace_name: string;
  plan: z.infer<typeof PlanName>;
  role: WorkspaceRole;
  /** The role that applies on the workspace's plan (null: inert off Enterprise). */
  effective_role: WorkspaceRole | null;
  /** What the person may do there, from the matrix (all of it for an operator). */
  actions: WorkspaceAction[];
}

export interface ConsoleSession {
  user: ConsoleUser;
  /** Sent back in `x-csrf-token` on every state-changing call. */
  csrf_token: string;
  memberships: ConsoleMembership[];
}

export interface ConsoleMember {
  user_id: string;
  email: string;
  name: string | null;
  role: WorkspaceRole;
  effective_role: WorkspaceRole | null;
  joined_at: number;
}

export interface ConsoleInvitation {
  id: string;
  email: string;
  role: WorkspaceRole;
  created_at: number;
  expires_at: number;
  /** Only in the answer that creates it: the single-use link to hand over. */
  link?: string;
  /** Only in the answer that creates it: whether the mail server took the invitation (SMTP set). */
  emailed?: boolean;
}

export const consoleCsrfHeader = "x-csrf-token";
