// Connect-JSON transport for CommsService: unary calls, server streams, and Connect errors
// (with their field violations: compass.v1.InvalidFields, else google.rpc.BadRequest) as
// RpcError.

const SERVICE = "compass.v1.CommsService";
const FLAG_COMPRESSED = 0x01;
const FLAG_END_STREAM = 0x02;

/** A Connect error: `code` is the lower-case Connect code ("invalid_argument", ...). */
export class RpcError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{field: string, description: string, questionId: string}[]} [violations]
   */
  constructor(code, message, violations = []) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.violations = violations;
  }
}

// The Connect protocol's HTTP-to-code table, for answers that carry no Connect error body (a
// proxy's 502, ...): https://connectrpc.com/docs/protocol/#http-to-error-code. Anything else
// is "unknown". (400 is "internal" there: a Connect server always sends a body with its 400s.)
const HTTP_CODES = {
  400: "internal",
  401: "unauthenticated",
  403: "permission_denied",
  404: "unimplemented",
  429: "unavailable",
  502: "unavailable",
  503: "unavailable",
  504: "unavailable",
};

function endpoint(method) {
  // Relative to the page, so the UI also works when served under a path prefix.
  return new URL(`${SERVICE}/${method}`, document.baseURI).toString();
}

function headers(token, contentType) {
  return {
    "content-type": contentType,
    "connect-protocol-version": "1",
    authorization: `Bearer ${token}`,
  };
}

function isAbort(error) {
  return error instanceof DOMException && error.name === "AbortError";
}

/** Calls a unary CommsService method; resolves to the decoded response object. */
export async function unary(token, method, body, { signal } = {}) {
  let response;
  try {
    response = await fetch(endpoint(method), {
      method: "POST",
      headers: headers(token, "application/json"),
      body: JSON.stringify(body),
      signal,
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    if (isAbort(error)) throw error;
    throw new RpcError("unavailable", "The server could not be reached.");
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    if (isAbort(error)) throw error;
    data = null; // not JSON (a proxy page): fall back on the HTTP status below
  }
  if (response.ok && data !== null && typeof data === "object") return data;
  throw errorFrom(data, response.status);
}

/**
 * Calls a server-streaming CommsService method. `onOpen` runs once the server accepted the
 * call; `onMessage` gets each decoded response. Resolves when the server ends the stream
 * cleanly; rejects with RpcError (or AbortError when `signal` fires).
 */
export async function serverStream(token, method, body, { signal, onOpen, onMessage }) {
  const payload = new TextEncoder().encode(JSON.stringify(body));
  const envelope = new Uint8Array(5 + payload.length);
  new DataView(envelope.buffer).setUint32(1, payload.length, false);
  envelope.set(payload, 5);
  let response;
  try {
    response = await fetch(endpoint(method), {
      method: "POST",
      headers: headers(token, "application/connect+json"),
      body: envelope,
      signal,
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    if (isAbort(error)) throw error;
    throw new RpcError("unavailable", "The server could not be reached.");
  }
  if (!response.ok || !response.body) {
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    throw errorFrom(data, response.status);
  }
  // The server answers a refused call with an error end frame, also under HTTP 200; a brief
  // "open" before such an error is harmless for the callers here.
  onOpen?.();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = new Uint8Array(0);
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (error) {
      if (isAbort(error)) throw error;
      throw new RpcError("unavailable", "The connection to the server was lost.");
    }
    if (chunk.done) break;
    buffer = concat(buffer, chunk.value);
    while (buffer.length >= 5) {
      const flags = buffer[0];
      const length = new DataView(buffer.buffer, buffer.byteOffset, 5).getUint32(1, false);
      if (buffer.length < 5 + length) break;
      const data = decoder.decode(buffer.subarray(5, 5 + length));
      buffer = buffer.slice(5 + length);
      if (flags & FLAG_COMPRESSED) {
        throw new RpcError("internal", "The server sent a compressed frame this page cannot read.");
      }
      const decoded = parseJson(data);
      if (flags & FLAG_END_STREAM) {
        if (decoded && typeof decoded === "object" && decoded.error) throw errorFrom(decoded.error, 200);
        return;
      }
      onMessage(decoded);
    }
  }
  throw new RpcError("unavailable", "The server closed the stream without ending it.");
}

function concat(a, b) {
  if (a.length === 0) return b;
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a, 0);
  joined.set(b, a.length);
  return joined;
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    throw new RpcError("internal", "The server sent a frame this page cannot read.");
  }
}

/** An RpcError from a Connect error body (or the HTTP status when there is none). */
export function errorFrom(data, status) {
  const known = data !== null && typeof data === "object";
  const code = known && typeof data.code === "string" ? data.code : HTTP_CODES[status] ?? "unknown";
  const message = known && typeof data.message === "string" ? data.message : `HTTP ${status}`;
  const details = known && Array.isArray(data.details) ? data.details.filter(Boolean) : [];
  // compass.v1.InvalidFields carries each violation with the question it is about; a server
  // without it sends only google.rpc.BadRequest (no question ids then).
  const invalid = details.find((detail) => detail.type === "compass.v1.InvalidFields");
  const violations = invalid
    ? invalidFieldsViolations(invalid)
    : details.filter((detail) => detail.type === "google.rpc.BadRequest").flatMap(badRequestViolations);
  return new RpcError(code, message, violations);
}

// compass.v1.InvalidFields { repeated InvalidField fields = 1; }
// InvalidField { string field = 1; string description = 2; string question_id = 3; }
function invalidFieldsViolations(detail) {
  if (typeof detail.value !== "string") return [];
  try {
    const violations = [];
    for (const [number, value] of protoFields(base64Bytes(detail.value))) {
      if (number !== 1 || !(value instanceof Uint8Array)) continue;
      const violation = { field: "", description: "", questionId: "" };
      for (const [inner, text] of protoFields(value)) {
        if (!(text instanceof Uint8Array)) continue;
        const decoded = new TextDecoder().decode(text);
        if (inner === 1) violation.field = decoded;
        if (inner === 2) violation.description = decoded;
        if (inner === 3) violation.questionId = decoded;
      }
      violations.push(violation);
    }
    return violations;
  } catch {
    return [];
  }
}

function badRequestViolations(detail) {
  const fromDebug = detail.debug && detail.debug.fieldViolations;
  if (Array.isArray(fromDebug)) {
    return fromDebug
      .filter((v) => v && typeof v === "object")
      .map((v) => ({ field: String(v.field ?? ""), description: String(v.description ?? ""), questionId: "" }));
  }
  // `debug` is optional in the Connect protocol: decode the binary detail instead.
  if (typeof detail.value !== "string") return [];
  try {
    return decodeBadRequest(base64Bytes(detail.value));
  } catch {
    return [];
  }
}

function base64Bytes(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(padded + "===".slice((padded.length + 3) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

// google.rpc.BadRequest { repeated FieldViolation field_violations = 1; }
// FieldViolation { string field = 1; string description = 2; ... }
function decodeBadRequest(bytes) {
  const violations = [];
  for (const [number, value] of protoFields(bytes)) {
    if (number !== 1 || !(value instanceof Uint8Array)) continue;
    const violation = { field: "", description: "", questionId: "" };
    for (const [inner, text] of protoFields(value)) {
      if (!(text instanceof Uint8Array)) continue;
      if (inner === 1) violation.field = new TextDecoder().decode(text);
      if (inner === 2) violation.description = new TextDecoder().decode(text);
    }
    violations.push(violation);
  }
  return violations;
}

function* protoFields(bytes) {
  let at = 0;
  const varint = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (at >= bytes.length) throw new Error("truncated varint");
      const byte = bytes[at++];
      result += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return result;
      shift += 7;
      if (shift > 63) throw new Error("varint too long");
    }
  };
  while (at < bytes.length) {
    const key = varint();
    const number = Math.floor(key / 8);
    switch (key % 8) {
      case 0:
        yield [number, varint()];
        break;
      case 1:
        at += 8;
        break;
      case 2: {
        const length = varint();
        if (at + length > bytes.length) throw new Error("truncated field");
        yield [number, bytes.subarray(at, at + length)];
        at += length;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        throw new Error("unsupported wire type");
    }
  }
}
