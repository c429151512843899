// The pure function of ui/src/emailasks.js: what the Email panel says and offers.

import assert from "node:assert/strict";
import { test } from "node:test";

import { emailView } from "../../ui/src/emailasks.js";

test("the panel says where asks go and offers the switch the other way", () => {
  const on = emailView({ email: "ana@example.com", emailAsks: true, serverSends: true });
  assert.match(on.text, /ana@example\.com/);
  assert.equal(on.button, "Stop email asks");
  assert.equal(on.next, false);
  const off = emailView({ email: "ana@example.com", emailAsks: false, serverSends: true });
  assert.equal(off.button, "Email me asks");
  assert.equal(off.next, true);
});

test("no address or no mail from this server: nothing to switch", () => {
  assert.equal(emailView({ email: "", emailAsks: true, serverSends: true }).button, null);
  const quiet = emailView({ email: "ana@example.com", emailAsks: true, serverSends: false });
  assert.equal(quiet.button, null);
  assert.match(quiet.text, /does not send email/);
});
