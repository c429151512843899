// @ts-check
// "Notify me on this device" and the person's Devices (Web Push; docs/answering/push.md):
// asks the browser's permission, subscribes with the key of GetPushConfig and registers the
// subscription (AddPushSubscription); lists the devices (ListPushSubscriptions) with how
// their last pushes went, each removable (RemovePushSubscription). Where push cannot work
// (blocked, not supported, iOS outside the Home Screen, no HTTPS) it says so instead.
// The service worker itself is registered by app.js (`registerServiceWorker`).

import { byId as $, h, timeNode, untrusted } from "./dom.js";
import { applicationServerKey, deviceName, pushSupport, subscriptionFields } from "./push.js";
import { RpcError, comms, unary } from "./rpc.js";

/**
 * @typedef {import("../gen/compass/v1/comms_pb.js").PushSubscription} Device
 */

const THIS_DEVICE_KEY = "compass.pushDevice"; // the subscription id of this browser (not a secret)

/**
 * Register the service worker (notifications, the offline page); null where there is none.
 * @returns {Promise<ServiceWorkerRegistration | null>}
 */
export async function registerServiceWorker() {
  if (!("serviceWorker" in navigator) || !window.isSecureContext) return null;
  try {
    return await navigator.serviceWorker.register("sw.js", { scope: "./" });
  } catch (error) {
    console.warn("the service worker could not be registered", error);
    return null;
  }
}

/** @param {boolean} subscribed */
function environment(subscribed) {
  const standalone =
    window.matchMedia?.("(display-mode: standalone)").matches ||
    /** @type {{standalone?: boolean}} */ (navigator).standalone === true;
  return {
    secure: window.isSecureContext,
    serviceWorker: "serviceWorker" in navigator,
    pushManager: "PushManager" in window,
    notification: "Notification" in window,
    permission: "Notification" in window ? Notification.permission : "default",
    ios: /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1),
    standalone,
    subscribed,
  };
}

/** The Devices panel of one signed-in person. */
export class Devices {
  /** @param {{token: string}} options */
  constructor({ token }) {
    this.token = token;
    this.stopped = false;
    /** @type {Device[]} */
    this.devices = [];
  }

  stop() {
    this.stopped = true;
  }

  async start() {
    $("push-enable").onclick = () => {
      this.enable();
    };
    await this.refresh();
  }

  /** The subscription this browser holds, if any. */
  async current() {
    if (!("serviceWorker" in navigator) || !("PushManager" in window)) return null;
    const registration = await navigator.serviceWorker.getRegistration();
    return (await registration?.pushManager.getSubscription()) ?? null;
  }

  async refresh() {
    let listed = this.devices;
    try {
      listed = (await unary(comms(this.token).listPushSubscriptions({}))).subscriptions;
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
    }
    if (this.stopped) return;
    this.devices = listed;
    const mine = localStorage.getItem(THIS_DEVICE_KEY);
    const subscribed = Boolean(mine && listed.some((d) => d.subscriptionId === mine) && (await this.current()));
    this.render(subscribed);
  }

  /** @param {boolean} subscribed */
  render(subscribed, error = "") {
    const support = pushSupport(environment(subscribed));
    const button = /** @type {HTMLButtonElement} */ ($("push-enable"));
    button.hidden = support.state !== "off";
    const note = $("push-note");
    note.textContent = error || support.text;
    note.hidden = !note.textContent;
    note.classList.toggle("form-error", Boolean(error));
    const mine = localStorage.getItem(THIS_DEVICE_KEY);
    $("devices-empty").hidden = this.devices.length > 0;
    $("devices-list").replaceChildren(...this.devices.map((device) => this.item(device, device.subscriptionId === mine)));
  }

  /**
   * @param {Device} device
   * @param {boolean} here
   */
  item(device, here) {
    const remove = h("button", { type: "button", class: "button button-quiet device-remove" }, "Remove");
    remove.addEventListener("click", () => {
      this.remove(device.subscriptionId);
    });
    return h(
      "li",
      { class: "device", dataset: { subscriptionId: device.subscriptionId } },
      h("span", { class: "device-name" }, untrusted("bdi", {}, device.deviceName || "A device"), here ? " (this device)" : ""),
      h(
        "span",
        { class: "device-meta" },
        device.lastSuccessAt ? ["Last notified ", timeNode(device.lastSuccessAt)] : "Not notified yet",
      ),
      device.lastError ? h("span", { class: "device-error" }, "Last error: ", untrusted("bdi", {}, device.lastError)) : null,
      remove,
    );
  }

  async enable() {
    const button = /** @type {HTMLButtonElement} */ ($("push-enable"));
    button.disabled = true;
    try {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") {
        this.render(false);
        return;
      }
      const registration = await navigator.serviceWorker.ready;
      const key = (await unary(comms(this.token).getPushConfig({}))).vapidPublicKey;
      const serverKey = applicationServerKey(key);
      let subscription = await registration.pushManager.getSubscription();
      if (subscription && !sameKey(subscription, serverKey)) {
        await subscription.unsubscribe(); // made for another server key: useless now
        subscription = null;
      }
      subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: serverKey });
      const fields = subscriptionFields(subscription.toJSON(), deviceName(navigator.userAgent));
      const added = await unary(comms(this.token).addPushSubscription(fields));
      localStorage.setItem(THIS_DEVICE_KEY, added.subscriptionId);
      await this.refresh();
    } catch (error) {
      const words =
        error instanceof RpcError
          ? `Compass refused this device: ${error.message}`
          : "The browser could not subscribe to notifications (its push service may be unreachable). Try again later.";
      console.warn("push subscription failed", error);
      this.render(false, words);
    } finally {
      button.disabled = false;
    }
  }

  /** @param {string} subscriptionId */
  async remove(subscriptionId) {
    try {
      await unary(comms(this.token).removePushSubscription({ subscriptionId }));
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      if (error.code !== "not_found") {
        this.render(false, `Could not remove the device: ${error.message}`);
        return;
      }
    }
    if (localStorage.getItem(THIS_DEVICE_KEY) === subscriptionId) {
      localStorage.removeItem(THIS_DEVICE_KEY);
      await (await this.current())?.unsubscribe();
    }
    await this.refresh();
  }
}

/**
 * Whether a subscription was made with `key` (a server whose key changed needs a new one).
 * @param {PushSubscription} subscription
 * @param {Uint8Array} key
 */
function sameKey(subscription, key) {
  const held = subscription.options.applicationServerKey;
  if (!held) return true; // not said: keep it
  const bytes = new Uint8Array(held);
  return bytes.length === key.length && bytes.every((byte, i) => byte === key[i]);
}
