// The pure functions of ui/src/push.js: when a device can be notified and the words when it
// cannot, the subscribe key, the device's name and AddPushSubscription's fields.

import assert from "node:assert/strict";
import { test } from "node:test";

import { applicationServerKey, deviceName, pushSupport, subscriptionFields } from "../../ui/src/push.js";

const READY = {
  secure: true,
  serviceWorker: true,
  pushManager: true,
  notification: true,
  permission: "default",
  ios: false,
  standalone: false,
  subscribed: false,
};

test("each reason push cannot work is said in words, the first that applies", () => {
  assert.equal(pushSupport(READY).state, "off");
  assert.equal(pushSupport({ ...READY, permission: "granted", subscribed: true }).state, "on");
  assert.equal(pushSupport({ ...READY, permission: "granted" }).state, "off");
  const denied = pushSupport({ ...READY, permission: "denied" });
  assert.equal(denied.state, "denied");
  assert.match(denied.text, /blocked/);
  const ios = pushSupport({ ...READY, ios: true, pushManager: false });
  assert.equal(ios.state, "ios-install");
  assert.match(ios.text, /Add to Home Screen/);
  assert.equal(pushSupport({ ...READY, ios: true, standalone: true, pushManager: true }).state, "off");
  assert.equal(pushSupport({ ...READY, serviceWorker: false }).state, "unsupported");
  assert.equal(pushSupport({ ...READY, notification: false }).state, "unsupported");
  assert.equal(pushSupport({ ...READY, secure: false }).state, "insecure");
});

test("the subscribe key is the bytes of the base64url text", () => {
  const bytes = Uint8Array.from({ length: 65 }, (_, i) => (i * 37 + 4) % 256);
  const text = Buffer.from(bytes).toString("base64url");
  assert.deepEqual(applicationServerKey(text), bytes);
  assert.deepEqual(applicationServerKey(Buffer.from([251, 255]).toString("base64url")), Uint8Array.from([251, 255]));
});

test("a device is named by its browser and system", () => {
  const android = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";
  assert.equal(deviceName(android), "Chrome on Android");
  assert.equal(deviceName("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"), "Safari on iOS");
  assert.equal(deviceName("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"), "Firefox on Linux");
  assert.equal(deviceName(""), "Browser");
});

test("AddPushSubscription gets the subscription's endpoint and keys", () => {
  const json = { endpoint: "https://push.test/1", keys: { p256dh: "P", auth: "A" } };
  assert.deepEqual(subscriptionFields(json, "x".repeat(300)), {
    endpoint: "https://push.test/1",
    p256dh: "P",
    auth: "A",
    deviceName: "x".repeat(200),
  });
  assert.deepEqual(subscriptionFields({}, "n"), { endpoint: "", p256dh: "", auth: "", deviceName: "n" });
});
