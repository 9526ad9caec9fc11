import { createLogger } from "@gw/logger";
import { startSmtpReceiver, type SmtpReceiver } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvitationMailer } from "./mailer";

let receiver: SmtpReceiver;
const logger = createLogger({ service: "mailer-test", level: "silent" });
const invitation = {
  to: "new@example.com",
  link: "https://gw.example/console/invite#token=abc",
  workspace: "Acme",
  role: "viewer",
  invitedBy: "Ana",
  expiresAt: new Date(0),
};

beforeAll(async () => {
  receiver = await startSmtpReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

describe("InvitationMailer", () => {
  it("when the server takes the message, then it says so and the mail holds the link", async () => {
    const mailer = new InvitationMailer({ url: receiver.url, from: "gw@example.com" }, logger);
    expect(await mailer.send(invitation)).toBe(true);
    expect(receiver.messages.at(-1)).toMatchObject({ to: ["new@example.com"], subject: "Ana invited you to Acme" });
    expect(receiver.messages.at(-1)?.text).toContain(invitation.link);
    mailer.close();
  });

  it.each([
    ["a wrong password", () => receiver.url.replace("smtp-test-password", "wrong")],
    ["no server at the address", () => "smtp://127.0.0.1:9"],
  ])("when sending fails (%s), then it answers false instead of throwing", async (_name, url) => {
    const mailer = new InvitationMailer({ url: url(), from: "gw@example.com" }, logger);
    expect(await mailer.send(invitation)).toBe(false);
    mailer.close();
  });
});
