// The pure functions of ui/src/page.js (app.js's decisions without the DOM),
// and what the page does with each code the Connect client can produce.

import assert from "node:assert/strict";
import { test } from "node:test";

import { uid } from "../../ui/src/dom.js";
import {
  CHANNEL_STOP_CODES,
  RETRY_FIRST_MS,
  RETRY_MAX_MS,
  askHref,
  channelHref,
  compareKeys,
  countByChannel,
  defaultChannel,
  firstQuestion,
  jittered,
  moreQuestions,
  nextDelay,
  orderKey,
  parseRoute,
  safeDecode,
  signInCode,
  signInRefusal,
  stopsChannel,
  switchQuestion,
  tickWait,
  withoutToken,
} from "../../ui/src/page.js";
import { sentenceText } from "../../ui/src/ask.js";
import { CODES } from "../../ui/src/rpc.js";
import { askOf, at, comms, create } from "./_proto.mjs";
import { cases, int, pick, string } from "./_random.mjs";

test("a channel stops only on the four codes retrying cannot fix", () => {
  assert.deepEqual([...CHANNEL_STOP_CODES].sort(), ["invalid_argument", "not_found", "permission_denied", "unauthenticated"]);
  for (const code of CODES) assert.equal(stopsChannel(code), CHANNEL_STOP_CODES.includes(code), code);
});

test("backoff doubles up to the cap; jitter stays within ±25%", () => {
  const seen = [];
  for (let delay = RETRY_FIRST_MS, i = 0; i < 10; i += 1, delay = nextDelay(delay)) seen.push(delay);
  assert.deepEqual(seen, [500, 1000, 2000, 4000, 8000, 10000, 10000, 10000, 10000, 10000]);
  assert.equal(RETRY_MAX_MS, 10000);
  for (const [delay, random] of cases(51, 1000, (r) => [int(r, 1, 20000), r()])) {
    const wait = jittered(delay, random);
    assert.ok(wait >= Math.round(delay * 0.75) && wait <= Math.round(delay * 1.25), `${delay} ${random} -> ${wait}`);
  }
  assert.equal(jittered(1000, 0), 750);
  assert.equal(jittered(1000, 0.5), 1000);
});

test("tickWait wakes the countdown on its next whole second", () => {
  for (const left of cases(52, 1000, (r) => int(r, 1, 100000))) {
    const wait = tickWait(left);
    assert.ok(wait >= 1 && wait <= Math.min(1000, left), `${left} -> ${wait}`);
    assert.equal((left - wait) % 1000, 0, `${left} -> ${wait}`);
  }
  assert.equal(tickWait(2500), 500);
  assert.equal(tickWait(2000), 1000);
});

test("messages order by creation time, then id; compareKeys is a total order", () => {
  const message = (init) => create(comms.MessageSchema, init);
  assert.deepEqual(orderKey(message({ createdAt: at("2024-01-01T00:00:01Z"), messageId: "m" })), [Date.parse("2024-01-01T00:00:01Z"), "m"]);
  assert.deepEqual(orderKey(message({})), [0, ""]);
  assert.deepEqual(orderKey(message({ messageId: "z" })), [0, "z"]);
  const keys = cases(53, 200, (r) => [int(r, 0, 5), pick(r, ["a", "b", "c", "aa", ""])]);
  for (const a of keys.slice(0, 40)) {
    assert.equal(compareKeys(a, a), 0);
    for (const b of keys.slice(0, 40)) {
      assert.equal(Math.sign(compareKeys(a, b)) + Math.sign(compareKeys(b, a)), 0, `${a} ${b}`); // antisymmetric
      if (compareKeys(a, b) === 0) assert.deepEqual(a, b);
    }
  }
  const sorted = [...keys].sort(compareKeys);
  for (let i = 1; i < sorted.length; i += 1) {
    const [p, q] = [sorted[i - 1], sorted[i]];
    assert.ok(p[0] < q[0] || (p[0] === q[0] && p[1] <= q[1]), `${p} before ${q}`);
  }
});

test("links to asks and channels read back to the same id, whatever it holds", () => {
  for (const id of cases(54, 500, (r) => string(r, 20))) {
    if (!id) continue; // an empty id makes no link
    assert.deepEqual(parseRoute(askHref(id)), { kind: "ask", id, raw: askHref(id).slice("#/ask/".length) });
    assert.deepEqual(parseRoute(channelHref(id)).id, id);
    assert.equal(parseRoute(channelHref(id)).kind, "channel");
    assert.doesNotMatch(askHref(id).slice(6), /[/#?]/);
  }
  assert.deepEqual(parseRoute(""), { kind: "none", id: null, raw: "" });
  assert.deepEqual(parseRoute("#/ask/"), { kind: "none", id: null, raw: "" });
  assert.deepEqual(parseRoute("#/channel/%E0%A4%A"), { kind: "channel", id: null, raw: "%E0%A4%A" });
  assert.deepEqual(parseRoute("#/sign-in/abc"), { kind: "none", id: null, raw: "" });
  assert.equal(safeDecode("%"), null);
  assert.equal(safeDecode("a%20b"), "a b");
});

test("signInCode takes only a well-formed code", () => {
  assert.equal(signInCode("#/sign-in/abc_DEF-123"), "abc_DEF-123");
  assert.equal(signInCode(`#/sign-in/${"a".repeat(100)}`), "a".repeat(100));
  for (const hash of [`#/sign-in/${"a".repeat(101)}`, "#/sign-in/", "#/sign-in/a b", "#/sign-in/a/b", "#/sign-in/a%20", "#/ask/x", ""]) {
    assert.equal(signInCode(hash), null, hash);
  }
});

test("withoutToken strips a token from the query or fragment and keeps the rest", () => {
  assert.equal(withoutToken("https://c.test/app/?token=s3cret&x=1#/channel/c"), "https://c.test/app/?x=1#/channel/c");
  assert.equal(withoutToken("https://c.test/#token=s3cret"), "https://c.test/");
  assert.equal(withoutToken("https://c.test/?a=1#/channel/c"), null);
  assert.equal(withoutToken("https://c.test/#/ask/token"), null);
  for (const [secret, other] of cases(55, 200, (r) => [string(r, 30), string(r, 10)])) {
    const href = `https://c.test/p/?other=${encodeURIComponent(other)}&token=${encodeURIComponent(secret)}`;
    const clean = withoutToken(href);
    assert.ok(clean !== null && !new URL(clean).searchParams.has("token"), href);
    assert.equal(new URL(clean).searchParams.get("other"), other);
  }
});

test("signInRefusal: the token's fault forgets it; anything else says why and keeps it", () => {
  assert.deepEqual(signInRefusal("unauthenticated", "x", true, true), { text: "That token was not accepted.", forget: true });
  assert.deepEqual(signInRefusal("unauthenticated", "x", false, true), { text: "Your token is no longer accepted. Sign in again.", forget: true });
  assert.deepEqual(signInRefusal("permission_denied", "x", true, true), {
    text: "That token belongs to an agent account. Sign in with a person's token.",
    forget: true,
  });
  for (const code of CODES.filter((c) => c !== "unauthenticated" && c !== "permission_denied")) {
    assert.deepEqual(signInRefusal(code, "HTTP 502", true, true), { text: "Could not sign in: HTTP 502", forget: false }, code);
  }
});

test("signInRefusal: a bare 401/403 (a proxy's, no Connect error) neither blames nor forgets the token", () => {
  for (const code of ["unauthenticated", "permission_denied"]) {
    for (const fromForm of [true, false]) {
      assert.deepEqual(signInRefusal(code, "HTTP 403", fromForm, false), { text: "Could not sign in: HTTP 403", forget: false }, code);
    }
  }
});

test("firstQuestion and countByChannel summarise the inbox", () => {
  assert.equal(firstQuestion(askOf({ questions: [{ question: "Q?", header: "H" }, { question: "2" }] })), "Q?");
  assert.equal(firstQuestion(askOf({ questions: [{ header: "H" }] })), "H");
  assert.equal(firstQuestion(askOf()), "A question");
  assert.equal(firstQuestion(undefined), "A question");
  const counts = countByChannel([{ channelId: "a" }, { channelId: "b" }, { channelId: "a" }, {}]);
  assert.deepEqual([...counts], [["a", 2], ["b", 1], [undefined, 1]]);
});

test("uid never repeats and keeps its prefix", () => {
  const ids = Array.from({ length: 1000 }, () => uid("option"));
  assert.equal(new Set(ids).size, ids.length);
  assert.ok(ids.every((id) => /^option-\d+$/.test(id)));
});

test("switchQuestion names both accounts and makes staying the plain choice", () => {
  const words = switchQuestion("Ada", "Mallory");
  assert.equal(words.title, "Switch accounts?");
  assert.match(sentenceText(words.text), /^You are signed in as Ada\. This sign-in link is for Mallory\./);
  assert.equal(sentenceText(words.stayLabel), "Stay signed in as Ada");
  assert.equal(sentenceText(words.switchLabel), "Switch to Mallory");
  // The names are parts of their own, which the page isolates.
  assert.deepEqual(words.switchLabel, ["Switch to ", { name: "Mallory" }]);
  assert.deepEqual(words.stayLabel, ["Stay signed in as ", { name: "Ada" }]);
});

test("moreQuestions counts questions, not asks", () => {
  assert.equal(moreQuestions(0), "");
  assert.equal(moreQuestions(1), "");
  assert.equal(moreQuestions(2), " · +1 more question");
  assert.equal(moreQuestions(5), " · +4 more questions");
});

test("defaultChannel: the last one, else the only one, else where an ask waits longest", () => {
  const a = { channelId: "ch_a", name: "a" };
  const b = { channelId: "ch_b", name: "b" };
  const waiting = [{ channelId: "ch_b" }, { channelId: "ch_a" }];
  assert.equal(defaultChannel([a, b], "ch_a", waiting), a);
  assert.equal(defaultChannel([a, b], "ch_gone", waiting), b);
  assert.equal(defaultChannel([a, b], null, []), null);
  assert.equal(defaultChannel([a], null, []), a);
  assert.equal(defaultChannel([a, b], null, [{ channelId: "ch_elsewhere" }, { channelId: "ch_a" }]), a);
  assert.equal(defaultChannel([], null, waiting), null);
});
