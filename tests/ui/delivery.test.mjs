// The pure delivery-receipt decisions of ui/src/delivery.js: the words per
// receipt state, the wait for a receipt and what shows once it runs out. (The view, live, is
// covered by tests/browser/test_delivery.py.)

import assert from "node:assert/strict";
import { test } from "node:test";

import { STATUS } from "../../ui/src/ask.js";
import {
  DELIVERY,
  RECEIPT_WAIT_MS,
  RECEIPT_WAIT_PARAM,
  partsText,
  receiptOf,
  receiptWaitFrom,
} from "../../ui/src/delivery.js";
import { askOf, comms, create, timestampFromMs } from "./_proto.mjs";
import { cases, int, pick, string } from "./_random.mjs";

// Fixtures are written loosely (names for enums, RFC 3339 text for times) and read into the
// messages the client decodes: an unknown name is the zero value, unreadable text no time.
const number = (schema, value) =>
  typeof value === "number" ? value : (schema.values.find((v) => v.name === value)?.number ?? 0);
const stamp = (text) => {
  const ms = Date.parse(String(text ?? "").replace(/(\.\d{3})\d+/, "$1"));
  return Number.isNaN(ms) ? undefined : timestampFromMs(ms);
};
const toAsk = ({ status, answeredAt, closedAt, delivery, ...rest }) =>
  askOf({
    ...rest,
    status: number(comms.AskStatusSchema, status),
    answeredAt: stamp(answeredAt),
    closedAt: stamp(closedAt),
    delivery:
      delivery &&
      create(comms.AskDeliverySchema, {
        ...delivery,
        state: number(comms.DeliveryStateSchema, delivery.state),
        reportedAt: stamp(delivery.reportedAt),
      }),
  });

const ANSWERED_AT = "2026-12-04T10:00:00.123456Z";
const T0 = Date.parse("2026-12-04T10:00:00.123Z");
const AGENT = "Coding Agent";
const WAIT = RECEIPT_WAIT_MS;

/** @param {object} ask @param {number} now */
const at = (ask, now, agent = AGENT, waitMs = WAIT) => receiptOf(toAsk(ask), { agent, now, waitMs });
const answered = (extra = {}) => ({ askId: "a", status: STATUS.ANSWERED, answeredAt: ANSWERED_AT, ...extra });
const declined = (extra = {}) => ({ askId: "a", status: STATUS.DECLINED, closedAt: ANSWERED_AT, ...extra });
const receipt = (state, extra = {}) => ({
  state,
  detail: "",
  payload: "",
  reportedByAccountId: "acc-agent",
  reportedByName: "Bridge Agent",
  reportedAt: "2026-12-04T10:00:01Z",
  ...extra,
});

test("the wait is 20 s, a named constant", () => {
  assert.equal(RECEIPT_WAIT_MS, 20_000);
});

test("no receipt yet: neutral 'waiting' before the wait runs out, with the time left", () => {
  for (const ask of [answered(), declined()]) {
    const r = at(ask, T0 + 1_500);
    assert.equal(r?.state, "waiting");
    assert.equal(partsText(r.line), "Waiting for Coding Agent to confirm delivery");
    assert.deepEqual(r.byline, []);
    assert.equal(r.changesInMs, WAIT - 1_500);
  }
  assert.equal(at(answered(), T0).changesInMs, WAIT);
  assert.equal(at(answered(), T0 + WAIT - 1).state, "waiting");
});

test("no receipt once the wait ran out: says the agent may not have received it", () => {
  for (const now of [T0 + WAIT, T0 + WAIT + 1, T0 + 365 * 86400_000]) {
    for (const ask of [answered(), declined()]) {
      const r = at(ask, now);
      assert.equal(r?.state, "missing");
      assert.equal(partsText(r.line), "No delivery receipt from Coding Agent yet: the agent may not have received this");
      assert.equal(r.changesInMs, null);
    }
  }
});

test("the wait counts from answeredAt for an answer and from closedAt for a decline", () => {
  const late = "2026-12-04T10:00:15.123Z";
  assert.equal(at(answered({ closedAt: late }), T0 + WAIT + 100).state, "missing");
  assert.equal(at(declined({ closedAt: late, answeredAt: ANSWERED_AT }), T0 + WAIT + 100).state, "waiting");
  // Only the other stamp known: that one.
  assert.equal(at({ status: STATUS.ANSWERED, answeredByAccountId: "p", closedAt: ANSWERED_AT }, T0 + 1).state, "waiting");
  assert.equal(at({ status: STATUS.DECLINED, answeredAt: ANSWERED_AT }, T0 + 1).state, "waiting");
});

test("with no usable time to count from, the page does not wait: the receipt is missing", () => {
  for (const stamp of [undefined, "", "yesterday"]) {
    assert.equal(at(answered({ answeredAt: stamp, answeredByAccountId: "p" }), T0).state, "missing", String(stamp));
    assert.equal(at(declined({ closedAt: stamp }), T0).state, "missing", String(stamp));
  }
});

test("a browser clock behind the server's waits longer, but only by that much", () => {
  const r = at(answered(), T0 - 5_000);
  assert.equal(r.state, "waiting");
  assert.equal(r.changesInMs, WAIT + 5_000);
});

test("a shorter wait (the test hook) and a zero wait", () => {
  assert.equal(at(answered(), T0 + 600, AGENT, 500).state, "missing");
  assert.equal(at(answered(), T0 + 400, AGENT, 500).changesInMs, 100);
  assert.equal(at(answered(), T0, AGENT, 0).state, "missing");
});

test("the agent is named as the message's author, else 'the agent'", () => {
  assert.equal(partsText(at(answered(), T0, "").line), "Waiting for the agent to confirm delivery");
  assert.equal(partsText(at(answered(), T0 + WAIT, "").line), "No delivery receipt from the agent yet: the agent may not have received this");
  assert.deepEqual(at(answered(), T0, "<b>x</b>").line[1], { name: "<b>x</b>" }); // a name stays a name (text)
});

test("pending asks have no receipt line; withdrawn, timed-out and expired ones have none due", () => {
  assert.equal(at({ status: STATUS.PENDING }, T0), null);
  assert.equal(at({}, T0), null);
  for (const status of [STATUS.WITHDRAWN, STATUS.TIMED_OUT, STATUS.EXPIRED]) {
    assert.equal(at({ status, closedAt: ANSWERED_AT, answeredAt: ANSWERED_AT }, T0 + WAIT * 10), null, status);
  }
});

test("DELIVERED: 'Delivered to <reporter> at <time>', with the detail when one came", () => {
  const r = at(answered({ delivery: receipt(DELIVERY.DELIVERED) }), T0);
  assert.equal(r.state, "delivered");
  assert.equal(partsText(r.line), "Delivered to Bridge Agent at 2026-12-04T10:00:01Z");
  assert.deepEqual(r.line.at(-1), { time: stamp("2026-12-04T10:00:01Z") });
  assert.deepEqual(r.byline, []);
  assert.equal(r.changesInMs, null);
  const noted = at(answered({ delivery: receipt(1, { detail: "as JSON" }) }), T0);
  assert.equal(partsText(noted.line), "Delivered to Bridge Agent at 2026-12-04T10:00:01Z: as JSON");
  // The reporter's name, else its account id, else the asker.
  assert.equal(partsText(at(answered({ delivery: receipt(1, { reportedByName: "" }) }), T0).line), "Delivered to acc-agent at 2026-12-04T10:00:01Z");
  assert.equal(
    partsText(at(answered({ delivery: receipt(1, { reportedByName: "", reportedByAccountId: "" }) }), T0).line),
    "Delivered to Coding Agent at 2026-12-04T10:00:01Z",
  );
});

test("DELIVERED_WITH_CHANGES: a notice with the detail, then who and when", () => {
  const r = at(declined({ delivery: receipt(DELIVERY.DELIVERED_WITH_CHANGES, { detail: "the skip became empty text" }) }), T0);
  assert.equal(r.state, "changed");
  assert.equal(partsText(r.line), "Delivered with changes: the skip became empty text");
  assert.deepEqual(r.line[0], { lead: "Delivered with changes:" });
  assert.deepEqual(r.line[2], { text: "the skip became empty text" });
  assert.equal(partsText(r.byline), "Delivered to Bridge Agent at 2026-12-04T10:00:01Z");
  assert.equal(partsText(at(answered({ delivery: receipt(2) }), T0).line), "Delivered with changes: the agent's side did not say what changed");
});

test("NOT_DELIVERED: a warning with the reason, then who reported it and when", () => {
  const r = at(answered({ delivery: receipt(DELIVERY.NOT_DELIVERED, { detail: "the form was declined <b>whole</b>" }) }), T0);
  assert.equal(r.state, "not-delivered");
  assert.equal(partsText(r.line), "Not delivered: the form was declined <b>whole</b>");
  assert.deepEqual(r.line[2], { text: "the form was declined <b>whole</b>" });
  assert.equal(partsText(r.byline), "Reported by Bridge Agent at 2026-12-04T10:00:01Z");
  assert.equal(partsText(at(answered({ delivery: receipt(3) }), T0).line), "Not delivered: no reason was given");
});

test("a receipt in a state this page does not know is never shown as delivered", () => {
  for (const state of [undefined, 0, DELIVERY.UNSPECIFIED, 7, "DELIVERY_STATE_PARTLY"]) {
    const r = at(answered({ delivery: receipt(state, { detail: "d" }) }), T0);
    assert.equal(r.state, "unknown", String(state));
    assert.match(partsText(r.line), /^Delivery not confirmed: the receipt says DELIVERY_STATE_\w+, which this page does not know: d$/);
    assert.equal(partsText(r.byline), "Reported by Bridge Agent at 2026-12-04T10:00:01Z");
  }
});

test("a receipt wins over the wait, whenever it came, and carries the payload", () => {
  for (const now of [T0, T0 + WAIT * 100]) {
    const r = at(answered({ delivery: receipt(DELIVERY.DELIVERED, { payload: '{"answers":{}}' }) }), now);
    assert.equal(r.state, "delivered");
    assert.equal(r.payload, '{"answers":{}}');
  }
  // Reported for an outcome no receipt is due for (the server refuses it; should one come): shown.
  assert.equal(at({ status: STATUS.WITHDRAWN, delivery: receipt(3, { detail: "x" }) }, T0).state, "not-delivered");
});

test("only a receipt saying so is ever 'delivered' (or 'with changes'): property over asks", () => {
  const statuses = [STATUS.PENDING, STATUS.ANSWERED, STATUS.DECLINED, STATUS.WITHDRAWN, STATUS.TIMED_OUT, STATUS.EXPIRED, 2, 3];
  for (const [ask, now, wait] of cases(81, 2000, (r) => {
    const ask = {
      status: pick(r, statuses),
      answeredAt: pick(r, [undefined, ANSWERED_AT, string(r, 8)]),
      closedAt: pick(r, [undefined, ANSWERED_AT]),
    };
    if (r() < 0.5) ask.delivery = receipt(pick(r, [...Object.values(DELIVERY), 1, 2, 3, 0, 5]), { detail: string(r, 10), payload: string(r, 10) });
    return [ask, T0 + int(r, -WAIT, 3 * WAIT), int(r, 0, WAIT)];
  })) {
    const r = at(ask, now, AGENT, wait);
    const said = ask.delivery?.state;
    const label = JSON.stringify([ask, now, wait]);
    if (r?.state === "delivered") assert.ok(said === DELIVERY.DELIVERED || said === 1, label);
    if (r?.state === "changed") assert.ok(said === DELIVERY.DELIVERED_WITH_CHANGES || said === 2, label);
    if (!ask.delivery) assert.ok(r === null || r.state === "waiting" || r.state === "missing", label);
    if (r?.state === "waiting") assert.ok(r.changesInMs > 0 && r.changesInMs <= wait + WAIT, label);
  }
});

test("receiptWaitFrom: the query can only shorten the wait, in whole milliseconds", () => {
  assert.equal(RECEIPT_WAIT_PARAM, "receipt-wait-ms");
  assert.equal(receiptWaitFrom(""), WAIT);
  assert.equal(receiptWaitFrom("?receipt-wait-ms=1500"), 1500);
  assert.equal(receiptWaitFrom("?a=1&receipt-wait-ms=0"), 0);
  assert.equal(receiptWaitFrom("?receipt-wait-ms=999999"), WAIT);
  for (const bad of ["", "-5", "1e3", "1.5", " 10", "abc", "9999999999"]) {
    assert.equal(receiptWaitFrom(`?receipt-wait-ms=${encodeURIComponent(bad)}`), WAIT, bad);
  }
});
