// The pure functions of ui/src/notice.js: what the service worker shows for a push, and what
// a tap on a button sends (the payloads are those of compass_server/domain/push.py).

import assert from "node:assert/strict";
import { test } from "node:test";

import { ICON, afterTap, answerRequest, noticeOf, openUrl } from "../../ui/src/notice.js";

const ASK = {
  type: "ask",
  ask_id: "ask_1",
  tag: "ask_1",
  title: "Coding Agent asks in #general",
  body: "Which database?",
  url: "https://c.test/#/ask/ask_1",
  actions: [
    { action: "0", title: "Postgres" },
    { action: "1", title: "SQLite" },
  ],
  answer_url: "https://c.test/push/answer",
  answer_token: "cmpa_t",
};

test("an ask's push becomes a notification with its tag, buttons and data", () => {
  assert.deepEqual(noticeOf(ASK), {
    kind: "ask",
    title: "Coding Agent asks in #general",
    options: {
      tag: "ask_1",
      body: "Which database?",
      actions: ASK.actions,
      data: {
        ask_id: "ask_1",
        url: "https://c.test/#/ask/ask_1",
        answer_url: "https://c.test/push/answer",
        answer_token: "cmpa_t",
      },
      icon: ICON,
      renotify: true,
    },
  });
});

test("buttons need a token, and two at most; broken ones are dropped", () => {
  const noToken = noticeOf({ ...ASK, answer_token: "" });
  assert.equal(noToken.kind, "ask");
  assert.deepEqual(noToken.kind === "ask" && noToken.options.actions, []);
  const many = noticeOf({ ...ASK, actions: [{ action: "a", title: "A" }, 5, { action: "" }, { action: "b", title: "B" }, { action: "c", title: "C" }] });
  assert.deepEqual(many.kind === "ask" && many.options.actions.map((a) => a.action), ["a", "b"]);
});

test("a closing push names the tag to close; anything else is ignored", () => {
  assert.deepEqual(noticeOf({ type: "ask_closed", ask_id: "ask_1", tag: "ask_1", status: "ASK_STATUS_ANSWERED", by: "Ada" }), {
    kind: "closed",
    tag: "ask_1",
    status: "ASK_STATUS_ANSWERED",
    by: "Ada",
  });
  for (const bad of [null, [], "ask", {}, { type: "ask" }, { ...ASK, url: 3 }, { ...ASK, type: "future" }, { type: "ask_closed" }]) {
    assert.deepEqual(noticeOf(bad), { kind: "unknown" }, JSON.stringify(bad));
  }
});

test("a tap sends the token and the option as JSON without credentials", () => {
  const notice = noticeOf(ASK);
  assert.equal(notice.kind, "ask");
  if (notice.kind !== "ask") return;
  const { url, init } = answerRequest(notice.options.data, "1");
  assert.equal(url, "https://c.test/push/answer");
  assert.equal(init.method, "POST");
  assert.equal(init.credentials, "omit");
  assert.deepEqual(init.headers, { "content-type": "application/json" });
  assert.deepEqual(JSON.parse(String(init.body)), { answer_token: "cmpa_t", option_id: "1" });
});

test("after a tap: done when answered or already ended, else the ask opens", () => {
  assert.equal(afterTap(200), "done");
  assert.equal(afterTap(409), "done");
  for (const status of [0, 400, 403, 404, 413, 500, 503]) assert.equal(afterTap(status), "open");
});

test("a notice opens only addresses of the app", () => {
  const data = { ask_id: "a", url: "https://c.test/#/ask/a", answer_url: "", answer_token: "" };
  assert.equal(openUrl(data, "https://c.test/"), "https://c.test/#/ask/a");
  assert.equal(openUrl({ ...data, url: "https://evil.test/" }, "https://c.test/"), "https://c.test/");
  assert.equal(openUrl(undefined, "https://c.test/"), "https://c.test/");
});
