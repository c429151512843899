// @ts-check
// The person's switch for asks by email (docs/answering/email.md): shows the address an
// operator set (GetEmailSettings) and turns email asks on or off (SetEmailAsks). A mail's
// unsubscribe link turns them off too; this is where they come back on.

import { byId as $ } from "./dom.js";
import { RpcError, comms, unary } from "./rpc.js";

/**
 * @typedef {{email: string, emailAsks: boolean, serverSends: boolean}} EmailState
 */

/**
 * What the Email panel says and offers, from the settings (pure).
 * @param {EmailState} settings
 * @returns {{text: string, button: string | null, next: boolean}}
 */
export function emailView(settings) {
  if (!settings.email) {
    return { text: "No email address is set for you; an operator can set one.", button: null, next: false };
  }
  const where = `Asks are mailed to ${settings.email}`;
  if (!settings.serverSends) {
    return { text: "This server does not send email.", button: null, next: false };
  }
  if (settings.emailAsks) {
    return { text: `${where}; reply to a mail to answer.`, button: "Stop email asks", next: false };
  }
  return { text: `Email asks are off for ${settings.email}.`, button: "Email me asks", next: true };
}

/** The Email panel of one signed-in person. */
export class EmailAsks {
  /** @param {{token: string}} options */
  constructor({ token }) {
    this.token = token;
    this.stopped = false;
    /** @type {EmailState | null} */
    this.settings = null;
  }

  stop() {
    this.stopped = true;
  }

  async start() {
    try {
      const got = await unary(comms(this.token).getEmailSettings({}));
      if (this.stopped || !got.settings) return;
      this.render(got.settings);
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      $("email").hidden = true; // no email on this server's store
    }
  }

  /** @param {EmailState} settings */
  render(settings, error = "") {
    this.settings = settings;
    const view = emailView(settings);
    $("email").hidden = false;
    const note = $("email-note");
    note.textContent = error || view.text;
    note.classList.toggle("form-error", Boolean(error));
    const button = /** @type {HTMLButtonElement} */ ($("email-toggle"));
    button.hidden = view.button === null;
    button.textContent = view.button ?? "";
    button.disabled = false;
    button.onclick = () => {
      this.set(view.next);
    };
  }

  /** @param {boolean} on */
  async set(on) {
    const button = /** @type {HTMLButtonElement} */ ($("email-toggle"));
    button.disabled = true;
    try {
      const done = await unary(comms(this.token).setEmailAsks({ on }));
      if (!this.stopped && done.settings) this.render(done.settings);
    } catch (error) {
      if (!(error instanceof RpcError) || !this.settings) throw error;
      this.render(this.settings, error.message);
    }
  }
}
