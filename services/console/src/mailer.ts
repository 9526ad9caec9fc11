import { createTransport, type Transporter } from "nodemailer";
import type { Logger } from "@gw/logger";

export interface SmtpSettings {
  /** `smtp://user:password@host:587` (STARTTLS when offered) or `smtps://…:465` (TLS from the start). */
  url: string;
  /** The sender, e.g. `Gateway <gateway@example.com>`. */
  from: string;
}

export interface Invitation {
  to: string;
  link: string;
  workspace: string;
  role: string;
  invitedBy: string;
  expiresAt: Date;
}

/**
 * Invitations sent by email through nodemailer, when SMTP is configured. The link is always shown in
 * the console as well: a mail server that is down or slow delays nothing and loses nothing, it only
 * means the link has to be handed over by hand (the answer says whether the mail went).
 */
export class InvitationMailer {
  private readonly transport: Transporter;

  constructor(
    private readonly settings: SmtpSettings,
    private readonly logger: Logger,
  ) {
    const url = new URL(settings.url);
    const secure = url.protocol === "smtps:";
    this.transport = createTransport({
      host: url.hostname,
      port: url.port ? Number(url.port) : secure ? 465 : 587,
      secure,
      auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  }

  /** Whether the server took the message. */
  async send(invitation: Invitation): Promise<boolean> {
    try {
      await this.transport.sendMail({
        from: this.settings.from,
        to: invitation.to,
        subject: `${invitation.invitedBy} invited you to ${invitation.workspace}`,
        text: [
          `${invitation.invitedBy} invited you to the workspace "${invitation.workspace}" on the AI gateway's console, as ${invitation.role}.`,
          "",
          `Open this link to join (it works once, until ${invitation.expiresAt.toUTCString()}):`,
          "",
          invitation.link,
          "",
          "If you did not expect this, ignore this message.",
        ].join("\n"),
      });
      return true;
    } catch (err) {
      this.logger.warn(
        { err: (err as Error).message, to: invitation.to },
        "console: the invitation could not be sent by email; its link is shown in the console",
      );
      return false;
    }
  }

  close(): void {
    this.transport.close();
  }
}
