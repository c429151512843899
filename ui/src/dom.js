// @ts-check
// Building DOM nodes. Text (all agent-supplied text included) only ever becomes Text nodes:
// nothing in this UI parses a string as HTML. Text someone else wrote goes in through
// `untrusted` or `sentence`, alone in a bidi-isolated element.

import { millis, rfc3339 } from "./ask.js";

let counter = 0;

/**
 * A document-unique id for wiring labels and descriptions (`<label for>`, aria-describedby).
 * @param {string} prefix
 */
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

/**
 * What `h` accepts as props: "class" (a string), "dataset" (an object), "on<event>" (a
 * listener), and attributes (`true`: present and empty; null, undefined, false: absent).
 * @typedef {{[name: string]: string | number | boolean | null | undefined
 *   | Record<string, string | number> | ((event: Event) => void)}} Props
 * @typedef {Node | string | number | null | undefined | false | ChildList} Child
 * @typedef {Array<Child>} ChildList
 */

/**
 * Creates an element. `props`: "class", "dataset" (object), "on<event>" (listener), `true`
 * for a boolean attribute, anything else an attribute set as a string. Children: nodes, or
 * strings/numbers (as text); null, undefined and false are skipped; arrays are flattened.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = String(value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/**
 * An element holding one string someone else wrote (an agent, another person, the address)
 * and nothing else: of class "untrusted", which app.css bidi-isolates, so that a bidi control
 * in the text (a U+202E, an unmatched U+2066) cannot reorder anything outside it. Every such
 * string on the page goes in through here or `sentence` (tests/browser/test_bidi.py walks the
 * page's text to hold that).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props} props
 * @param {string} text
 * @returns {HTMLElementTagNameMap[K]}
 */
export function untrusted(tag, props, text) {
  const node = h(tag, props, text);
  node.classList.add("untrusted");
  return node;
}

/**
 * A sentence's nodes: our words as text, each name alone in an untrusted <bdi>.
 * @param {import("./ask.js").Sentence} parts
 * @returns {Array<Node | string>}
 */
export function sentence(parts) {
  return parts.map((part) => (typeof part === "string" ? part : untrusted("bdi", {}, part.name)));
}

/**
 * @template {Element} E
 * @param {E} node
 * @param {Child[]} children
 * @returns {E}
 */
export function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child); // nested arrays: flattened, in order
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * Makes `parent`'s children exactly `wanted`, in order, without moving nodes already in
 * place (a moved node loses focus, which would interrupt someone typing in a form).
 * @param {Element} parent
 * @param {Element[]} wanted
 */
export function reconcile(parent, wanted) {
  wanted.forEach((node, index) => {
    const current = parent.children[index];
    if (current !== node) parent.insertBefore(node, current ?? null);
  });
  while (parent.children.length > wanted.length) parent.lastElementChild?.remove();
}

/**
 * The page's element with this id (index.html has them all: a missing one is a bug).
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`index.html has no #${id}`);
  return node;
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/**
 * A <time> element for a Timestamp, shown in the reader's local time.
 * @param {import("@bufbuild/protobuf/wkt").Timestamp | undefined} timestamp
 * @returns {HTMLElement}
 */
export function timeNode(timestamp) {
  const text = rfc3339(timestamp);
  const date = new Date(millis(timestamp));
  if (!text || Number.isNaN(date.getTime())) return h("span", {}, "an unknown time");
  return h("time", { datetime: text, title: date.toString() }, dateFormat.format(date));
}
