// @ts-check
// The page's decisions about Web Push that need neither the DOM nor the network (devices.js
// does the rest): whether this browser can be notified and the words that say why not, the
// key PushManager.subscribe takes, a device's default name, and what AddPushSubscription is
// sent. Node tests them (tests/ui/push.test.mjs).

/**
 * What the page knows of this browser.
 * @typedef {{secure: boolean, serviceWorker: boolean, pushManager: boolean,
 *   notification: boolean, permission: string, ios: boolean, standalone: boolean,
 *   subscribed: boolean}} PushEnv
 * @typedef {"on" | "off" | "denied" | "unsupported" | "ios-install" | "insecure"} PushState
 */

/**
 * Whether this device can get pushes, and what to tell the person.
 * @param {PushEnv} env
 * @returns {{state: PushState, text: string}}
 */
export function pushSupport(env) {
  if (!env.secure) {
    return {
      state: "insecure",
      text: "Notifications need Compass on https:// (or on this computer). Ask whoever runs it to serve it over HTTPS.",
    };
  }
  if (env.ios && !env.standalone && !env.pushManager) {
    return {
      state: "ios-install",
      text: "On iPhone and iPad, add Compass to your Home Screen first (Share, then “Add to Home Screen”), open it from there, and turn notifications on.",
    };
  }
  if (!env.serviceWorker || !env.pushManager || !env.notification) {
    return { state: "unsupported", text: "This browser cannot show notifications from Compass when it is closed." };
  }
  if (env.permission === "denied") {
    return {
      state: "denied",
      text: "Notifications are blocked for this site. Allow them in your browser's site settings, then try again.",
    };
  }
  if (env.subscribed && env.permission === "granted") {
    return { state: "on", text: "This device is notified of new asks, even with Compass closed." };
  }
  return { state: "off", text: "" };
}

/**
 * The applicationServerKey PushManager.subscribe takes: the bytes of GetPushConfig's base64url key.
 * @param {string} base64url
 * @returns {Uint8Array<ArrayBuffer>}
 */
export function applicationServerKey(base64url) {
  const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
  const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * A name for this device from its user agent ("Chrome on Android"), at most 200 characters.
 * @param {string} userAgent
 */
export function deviceName(userAgent) {
  const os = /Android/.test(userAgent)
    ? "Android"
    : /iPhone|iPad|iPod/.test(userAgent)
      ? "iOS"
      : /Mac OS X/.test(userAgent)
        ? "macOS"
        : /Windows/.test(userAgent)
          ? "Windows"
          : /Linux/.test(userAgent)
            ? "Linux"
            : "";
  const browser = /Edg\//.test(userAgent)
    ? "Edge"
    : /Firefox\//.test(userAgent)
      ? "Firefox"
      : /Chrome\/|Chromium\//.test(userAgent)
        ? "Chrome"
        : /Safari\//.test(userAgent)
          ? "Safari"
          : "Browser";
  return (os ? `${browser} on ${os}` : browser).slice(0, 200);
}

/**
 * AddPushSubscription's fields from PushSubscription.toJSON().
 * @param {{endpoint?: string, keys?: Record<string, string>}} json
 * @param {string} name
 * @returns {{endpoint: string, p256dh: string, auth: string, deviceName: string}}
 */
export function subscriptionFields(json, name) {
  return {
    endpoint: json.endpoint ?? "",
    p256dh: json.keys?.p256dh ?? "",
    auth: json.keys?.auth ?? "",
    deviceName: name.slice(0, 200),
  };
}
