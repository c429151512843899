// Building DOM nodes. Text (all agent-supplied text included) only ever becomes Text nodes:
// nothing in this UI parses a string as HTML.

let counter = 0;

/** A document-unique id for wiring labels and descriptions (`<label for>`, aria-describedby). */
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

/**
 * Creates an element. `props`: "class", "dataset" (object), "on<event>" (listener), `true`
 * for a boolean attribute, anything else an attribute set as a string. Children: nodes, or
 * strings/numbers (as text); null, undefined and false are skipped; arrays are flattened.
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Makes `parent`'s children exactly `wanted`, in order, without moving nodes already in
 * place (a moved node loses focus, which would interrupt someone typing in a form). */
export function reconcile(parent, wanted) {
  wanted.forEach((node, index) => {
    const current = parent.children[index];
    if (current !== node) parent.insertBefore(node, current ?? null);
  });
  while (parent.children.length > wanted.length) parent.lastElementChild.remove();
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** A <time> element for an RFC 3339 timestamp, shown in the reader's local time. */
export function timeNode(rfc3339) {
  const date = new Date(rfc3339);
  if (!rfc3339 || Number.isNaN(date.getTime())) return h("span", {}, "an unknown time");
  return h("time", { datetime: rfc3339, title: date.toString() }, dateFormat.format(date));
}
