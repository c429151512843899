// Unit tests of the UI's Connect client (compass_server/static/connect.js), run by
// `node --test tests/ui/` (tests/unit/test_ui_modules.py runs them in the test command).
import assert from "node:assert/strict";
import { test } from "node:test";

import { errorFrom } from "../../compass_server/static/connect.js";

// protobuf encoding of length-delimited fields (all these messages hold strings/messages)
function field(number, bytes) {
  const out = [(number << 3) | 2];
  let length = bytes.length;
  while (length >= 0x80) {
    out.push((length & 0x7f) | 0x80);
    length >>= 7;
  }
  out.push(length);
  return Uint8Array.from([...out, ...bytes]);
}
const utf8 = (text) => new TextEncoder().encode(text);
const concat = (...parts) => Uint8Array.from(parts.flatMap((part) => [...part]));
const base64 = (bytes) => Buffer.from(bytes).toString("base64").replace(/=+$/, "");

function invalidFields(...violations) {
  return concat(
    ...violations.map(([f, d, q]) => field(1, concat(field(1, utf8(f)), field(2, utf8(d)), field(3, utf8(q))))),
  );
}

test("violations come with their question from compass.v1.InvalidFields", () => {
  const bytes = invalidFields(
    ["answers[0].chosen_option_ids[0]", 'question "db": no option "9"', "db"],
    ["answers", 'question "f\\"x": no answer', 'f"x'],
  );
  const badRequest = field(1, concat(field(1, utf8("answers")), field(2, utf8("ignored when InvalidFields is there"))));
  const error = errorFrom(
    {
      code: "invalid_argument",
      message: "the answers do not fit the ask",
      details: [
        { type: "google.rpc.BadRequest", value: base64(badRequest) },
        { type: "compass.v1.InvalidFields", value: base64(bytes) },
      ],
    },
    400,
  );
  assert.equal(error.code, "invalid_argument");
  assert.deepEqual(error.violations, [
    { field: "answers[0].chosen_option_ids[0]", description: 'question "db": no option "9"', questionId: "db" },
    { field: "answers", description: 'question "f\\"x": no answer', questionId: 'f"x' },
  ]);
});

test("without InvalidFields, BadRequest violations still arrive (no question ids)", () => {
  const badRequest = field(1, concat(field(1, utf8("answers[1]")), field(2, utf8("too long"))));
  const error = errorFrom({ code: "invalid_argument", message: "m", details: [{ type: "google.rpc.BadRequest", value: base64(badRequest) }] }, 400);
  assert.deepEqual(error.violations, [{ field: "answers[1]", description: "too long", questionId: "" }]);
});

test("a broken detail is dropped, never thrown", () => {
  const error = errorFrom({ code: "invalid_argument", message: "m", details: [{ type: "compass.v1.InvalidFields", value: "%%%" }] }, 400);
  assert.deepEqual(error.violations, []);
});

test("answers without a Connect body follow the protocol's HTTP table", () => {
  const cases = { 400: "internal", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented", 429: "unavailable", 502: "unavailable", 503: "unavailable", 504: "unavailable", 408: "unknown", 409: "unknown", 500: "unknown" };
  for (const [status, code] of Object.entries(cases)) {
    const error = errorFrom(null, Number(status));
    assert.equal(error.code, code, `HTTP ${status}`);
    assert.equal(error.message, `HTTP ${status}`);
  }
});

test("a Connect error body wins over the HTTP status", () => {
  assert.equal(errorFrom({ code: "not_found", message: "ask not found" }, 400).code, "not_found");
  assert.equal(errorFrom({ code: 7, message: "x" }, 503).code, "unavailable"); // not a string code
});
