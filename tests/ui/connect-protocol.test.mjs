// The Connect client (compass_server/static/connect.js) against the Connect protocol
// (https://connectrpc.com/docs/protocol/) and the cases of connectrpc/conformance's
// "Connect Unexpected Responses" suite, with `fetch` answering from canned Responses.

import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  CODES,
  EnvelopeReader,
  RpcError,
  base64Bytes,
  codeFromHttpStatus,
  decodeViolations,
  encodeEnvelope,
  endStreamError,
  errorFrom,
  mediaType,
  serverStream,
  unary,
} from "../../compass_server/static/connect.js";
import { cases, int, pick, string } from "./_random.mjs";

// --- the HTTP-to-code table -------------------------------------------------------------

// https://connectrpc.com/docs/protocol/#http-to-error-code, row by row.
const PROTOCOL_TABLE = {
  400: "internal",
  401: "unauthenticated",
  403: "permission_denied",
  404: "unimplemented",
  429: "unavailable",
  502: "unavailable",
  503: "unavailable",
  504: "unavailable",
};

test("codeFromHttpStatus is the protocol's table, and unknown for every other status", () => {
  // So the statuses a Connect server sends for its own codes are not read back as those codes:
  // 400 is invalid_argument/failed_precondition/out_of_range on the way out, but a bare 400
  // (no Connect body: a proxy) must not claim the request was invalid; 408, 409, 500 are unknown.
  for (let status = 100; status <= 599; status += 1) {
    assert.equal(codeFromHttpStatus(status), PROTOCOL_TABLE[status] ?? "unknown", `HTTP ${status}`);
  }
});

// --- errorFrom: the error body ----------------------------------------------------------

test("errorFrom takes a valid Connect error's code and message over the status", () => {
  const error = errorFrom({ code: "failed_precondition", message: "closed" }, 400);
  assert.ok(error instanceof RpcError);
  assert.equal(error.code, "failed_precondition");
  assert.equal(error.message, "closed");
  assert.deepEqual(error.violations, []);
  assert.equal(error.closedAsk, null);
});

test("an error says whether the server itself gave its code, or only an HTTP status did", () => {
  assert.equal(errorFrom({ code: "unauthenticated", message: "bad token" }, 401).fromServer, true);
  for (const body of [null, {}, { code: "nope" }, "Forbidden"]) {
    assert.equal(errorFrom(body, 403).fromServer, false, JSON.stringify(body));
  }
  assert.equal(new RpcError("unavailable", "The server could not be reached.").fromServer, false);
});

test("errorFrom falls back on the status when the body is missing or not a Connect error", () => {
  for (const body of [undefined, null, "oops", 42, [], {}, { code: null }, { code: 3 }, { code: "bogus" }, { code: "INVALID_ARGUMENT" }]) {
    const error = errorFrom(body, 502);
    assert.equal(error.code, "unavailable", JSON.stringify(body));
  }
  assert.equal(errorFrom(null, 400).code, "internal");
  assert.equal(errorFrom(null, 400).message, "HTTP 400");
});

test("errorFrom keeps a proxy's JSON message but synthesizes one for an empty message", () => {
  assert.equal(errorFrom({ message: "slow down" }, 429).message, "slow down");
  assert.equal(errorFrom({ code: "aborted", message: "" }, 409).message, "HTTP 409");
  assert.equal(errorFrom({ code: "aborted" }, 409).code, "aborted");
});

test("errorFrom accepts every one of the 16 Connect codes and nothing else", () => {
  assert.equal(CODES.length, 16);
  for (const code of CODES) assert.equal(errorFrom({ code }, 503).code, code);
  for (const code of cases(11, 200, (r) => string(r, 12))) {
    const expected = CODES.includes(code) ? code : "unavailable";
    assert.equal(errorFrom({ code }, 503).code, expected, JSON.stringify(code));
  }
});

/** Protobuf encoding of google.rpc.BadRequest, by hand. */
function varint(n) {
  const bytes = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  bytes.push(n);
  return bytes;
}
function lengthDelimited(number, bytes) {
  return [...varint((number << 3) | 2), ...varint(bytes.length), ...bytes];
}
function badRequest(violations, { extra = false } = {}) {
  const encoder = new TextEncoder();
  const out = [];
  for (const { field, description } of violations) {
    let inner = [...lengthDelimited(1, encoder.encode(field)), ...lengthDelimited(2, encoder.encode(description))];
    // Fields this client skips: a varint (3), a fixed64 (4), a fixed32 (5).
    if (extra) inner = [...inner, ...varint((3 << 3) | 0), ...varint(300), (4 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8, (5 << 3) | 5, 1, 2, 3, 4];
    out.push(...lengthDelimited(1, inner));
  }
  return Uint8Array.from(out);
}
function base64(bytes, { urlSafe = false, padded = true } = {}) {
  let text = Buffer.from(bytes).toString("base64");
  if (urlSafe) text = text.replace(/\+/g, "-").replace(/\//g, "_");
  if (!padded) text = text.replace(/=+$/, "");
  return text;
}

test("field violations come from the detail's debug JSON when present", () => {
  const error = errorFrom(
    {
      code: "invalid_argument",
      message: "bad",
      details: [
        { type: "google.rpc.RetryInfo", value: "", debug: { retryDelay: "1s" } },
        {
          type: "google.rpc.BadRequest",
          value: "",
          debug: { fieldViolations: [{ field: "answers[0]", description: "pick one" }, null, { field: 3 }] },
        },
      ],
    },
    400,
  );
  assert.equal(error.code, "invalid_argument");
  assert.deepEqual(error.violations, [
    { field: "answers[0]", description: "pick one", questionId: "" },
    { field: "3", description: "", questionId: "" },
  ]);
});

test("without debug, field violations are decoded from the binary detail (any base64 flavour)", () => {
  for (const [index, violations] of cases(12, 100, (r) =>
    Array.from({ length: int(r, 0, 4) }, () => ({ field: string(r), description: string(r, 80) })),
  ).entries()) {
    const bytes = badRequest(violations, { extra: index % 2 === 1 });
    const value = base64(bytes, { urlSafe: index % 3 === 0, padded: index % 4 < 2 });
    const error = errorFrom({ code: "invalid_argument", details: [{ type: "google.rpc.BadRequest", value }] }, 400);
    assert.deepEqual(error.violations, violations.map((v) => ({ ...v, questionId: "" })), value);
  }
});

test("field 3 is the question id in compass.v1.InvalidFields, and BadRequest's reason is not", () => {
  const encoder = new TextEncoder();
  const inner = [
    ...lengthDelimited(1, encoder.encode("answers[0].custom_text")),
    ...lengthDelimited(2, encoder.encode("too long")),
    ...lengthDelimited(3, encoder.encode("db")),
  ];
  const value = base64(Uint8Array.from(lengthDelimited(1, inner)));
  const expected = { field: "answers[0].custom_text", description: "too long" };
  const invalid = errorFrom({ code: "invalid_argument", details: [{ type: "compass.v1.InvalidFields", value }] }, 400);
  assert.deepEqual(invalid.violations, [{ ...expected, questionId: "db" }]);
  const bad = errorFrom({ code: "invalid_argument", details: [{ type: "google.rpc.BadRequest", value }] }, 400);
  assert.deepEqual(bad.violations, [{ ...expected, questionId: "" }]);
});

test("InvalidFields wins over BadRequest when a server sends both", () => {
  const encoder = new TextEncoder();
  const violation = (field, description, questionId) =>
    lengthDelimited(1, [
      ...lengthDelimited(1, encoder.encode(field)),
      ...lengthDelimited(2, encoder.encode(description)),
      ...lengthDelimited(3, encoder.encode(questionId)),
    ]);
  const invalid = Uint8Array.from([
    ...violation("answers[0].chosen_option_ids[0]", 'question "db": no option "9"', "db"),
    ...violation("answers", 'question "f\\"x": no answer', 'f"x'),
  ]);
  const bad = badRequest([{ field: "answers", description: "ignored when InvalidFields is there" }]);
  const error = errorFrom(
    {
      code: "invalid_argument",
      message: "the answers do not fit the ask",
      details: [
        { type: "google.rpc.BadRequest", value: base64(bad) },
        { type: "compass.v1.InvalidFields", value: base64(invalid, { padded: false }) },
      ],
    },
    400,
  );
  assert.deepEqual(error.violations, [
    { field: "answers[0].chosen_option_ids[0]", description: 'question "db": no option "9"', questionId: "db" },
    { field: "answers", description: 'question "f\\"x": no answer', questionId: 'f"x' },
  ]);
});

test("a broken binary detail gives no violations, never an exception", () => {
  const good = badRequest([{ field: "answers[1].custom_text", description: "too long" }]);
  for (const value of [base64(good.subarray(0, good.length - 3)), "!!!not base64", "%%%", base64([0x0b]), base64([0xff, 0xff])]) {
    for (const type of ["google.rpc.BadRequest", "compass.v1.InvalidFields"]) {
      const error = errorFrom({ code: "invalid_argument", details: [{ type, value }] }, 400);
      assert.equal(error.code, "invalid_argument");
      assert.deepEqual(error.violations, [], `${type} ${value}`);
    }
  }
  assert.throws(() => decodeViolations(good.subarray(0, good.length - 1), false), /truncated/);
});

test("base64Bytes reads standard and URL-safe base64, padded or not", () => {
  for (const bytes of cases(13, 200, (r) => Uint8Array.from({ length: int(r, 0, 40) }, () => int(r, 0, 255)))) {
    for (const flavour of [{}, { urlSafe: true }, { padded: false }, { urlSafe: true, padded: false }]) {
      assert.deepEqual(base64Bytes(base64(bytes, flavour)), bytes);
    }
  }
});

test("errorFrom never throws and always yields a Connect code, whatever the body", () => {
  const leaf = (r) => pick(r, [null, true, 0, -1, 1.5, "", "code", "internal", string(r)]);
  const value = (r, depth = 0) => {
    const kind = depth > 2 ? 0 : int(r, 0, 2);
    if (kind === 0) return leaf(r);
    if (kind === 1) return Array.from({ length: int(r, 0, 3) }, () => value(r, depth + 1));
    const keys = ["code", "message", "details", "type", "value", "debug", "fieldViolations", "field", "description"];
    return Object.fromEntries(Array.from({ length: int(r, 0, 4) }, () => [pick(r, keys), value(r, depth + 1)]));
  };
  for (const [body, status] of cases(14, 2000, (r) => [value(r), int(r, 100, 599)])) {
    const error = errorFrom(body, status);
    assert.ok(CODES.includes(error.code), JSON.stringify(body));
    assert.equal(typeof error.message, "string");
    assert.ok(error.violations.every((v) => typeof v.field === "string" && typeof v.description === "string"));
  }
});

test("mediaType drops parameters and case", () => {
  assert.equal(mediaType("Application/JSON; charset=utf-8"), "application/json");
  assert.equal(mediaType(" application/connect+json "), "application/connect+json");
  assert.equal(mediaType(null), "");
});

// --- envelopes ---------------------------------------------------------------------------

test("encodeEnvelope writes flags, a big-endian length and the UTF-8 payload", () => {
  const envelope = encodeEnvelope(2, '{"a":"é"}');
  assert.deepEqual([...envelope.subarray(0, 5)], [2, 0, 0, 0, 10]);
  assert.equal(new TextDecoder().decode(envelope.subarray(5)), '{"a":"é"}');
});

test("EnvelopeReader gives back every message however the bytes are split", () => {
  for (const [messages, cuts] of cases(21, 300, (r) => {
    const messages = Array.from({ length: int(r, 0, 6) }, () => ({ flags: int(r, 0, 3), data: string(r, 300) }));
    return [messages, Array.from({ length: int(r, 0, 12) }, () => r())];
  })) {
    const bytes = Buffer.concat(messages.map((m) => encodeEnvelope(m.flags, m.data)));
    const points = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
    const reader = new EnvelopeReader();
    const got = [];
    let from = 0;
    for (const to of [...points, bytes.length]) {
      reader.push(new Uint8Array(bytes.subarray(from, to)));
      from = to;
      for (let frame = reader.next(); frame; frame = reader.next()) got.push(frame);
    }
    assert.deepEqual(got, messages);
    assert.equal(reader.next(), null);
    assert.equal(reader.buffer.length, 0);
  }
});

test("EnvelopeReader waits for a message's last byte", () => {
  const reader = new EnvelopeReader();
  const envelope = encodeEnvelope(0, "{}");
  reader.push(envelope.subarray(0, 6));
  assert.equal(reader.next(), null);
  reader.push(envelope.subarray(6));
  assert.deepEqual(reader.next(), { flags: 0, data: "{}" });
});

test("endStreamError: {} and a null error end cleanly; an error needs a valid code", () => {
  assert.equal(endStreamError({}), null);
  assert.equal(endStreamError({ error: null, metadata: {} }), null);
  assert.equal(endStreamError({ error: { code: "not_found", message: "gone" } }).code, "not_found");
  for (const error of [{}, { code: null }, { code: "nope" }, "unavailable"]) {
    assert.equal(endStreamError({ error }).code, "unknown", JSON.stringify(error));
  }
  for (const message of [null, [], "x", 3]) assert.equal(endStreamError(message).code, "internal");
});

// --- unary and serverStream against canned responses ------------------------------------

/** @type {{url: string, init: RequestInit}[]} */
let calls;
let answer;
const realFetch = globalThis.fetch;

beforeEach(() => {
  calls = [];
  globalThis.document = { baseURI: "https://compass.test/prefix/index.html" };
  globalThis.fetch = async (url, init) => {
    calls.push({ url: String(url), init });
    if (init.signal?.aborted) throw new DOMException("aborted", "AbortError");
    return answer();
  };
});
afterEach(() => {
  delete globalThis.document;
  globalThis.fetch = realFetch;
});

function respond(status, contentType, body) {
  const headers = contentType ? { "content-type": contentType } : {};
  answer = () => new Response(body, { status, headers });
}

function stream(chunks, { status = 200, contentType = "application/connect+json", fail = null } = {}) {
  let queue;
  answer = () => {
    queue = [...chunks];
    return new Response(
      new ReadableStream({
        // One chunk per read, so a failure comes after the chunks were read (an error
        // raised at once would discard the queued ones).
        pull(controller) {
          if (queue.length) controller.enqueue(queue.shift());
          else if (fail) controller.error(fail);
          else controller.close();
        },
      }),
      { status, headers: { "content-type": contentType } },
    );
  };
}

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
}

describe("unary", () => {
  test("POSTs Connect-JSON to the method's path relative to the page", async () => {
    respond(200, "application/json", '{"channels":[]}');
    assert.deepEqual(await unary("tok", "ListChannels", { a: 1 }), { channels: [] });
    const [{ url, init }] = calls;
    assert.equal(url, "https://compass.test/prefix/compass.v1.CommsService/ListChannels");
    assert.equal(init.method, "POST");
    assert.equal(init.body, '{"a":1}');
    assert.deepEqual(init.headers, {
      "content-type": "application/json",
      "connect-protocol-version": "1",
      authorization: "Bearer tok",
    });
    assert.equal(init.credentials, "omit");
  });

  test("a Connect error body gives its code, message and violations", async () => {
    const body = {
      code: "invalid_argument",
      message: "no",
      details: [{ type: "google.rpc.BadRequest", value: base64(badRequest([{ field: "answers[0]", description: "x" }])) }],
    };
    respond(400, "application/json; charset=utf-8", JSON.stringify(body));
    const error = await rejection(unary("t", "RespondToAsk", {}));
    assert.equal(error.code, "invalid_argument");
    assert.equal(error.message, "no");
    assert.deepEqual(error.violations, [{ field: "answers[0]", description: "x", questionId: "" }]);
  });

  test("without a Connect error body, every status maps by the protocol's table", async () => {
    for (const status of [400, 401, 403, 404, 408, 409, 412, 413, 429, 500, 502, 503, 504]) {
      for (const [type, body] of [["text/html", "<h1>Bad Gateway</h1>"], [null, ""], ["application/json", "null"], ["application/json", "{"], ["application/proto", "\x08\x01"]]) {
        respond(status, type, body);
        const error = await rejection(unary("t", "GetMe", {}));
        assert.ok(error instanceof RpcError);
        assert.equal(error.code, PROTOCOL_TABLE[status] ?? "unknown", `${status} ${type} ${body}`);
        assert.equal(error.message, `HTTP ${status}`);
      }
    }
  });

  test("a JSON error body under another content type is not trusted (conformance: unexpected-error-body)", async () => {
    respond(403, "text/plain", '{"code":"not_found","message":"x"}');
    assert.equal((await rejection(unary("t", "GetMe", {}))).code, "permission_denied");
  });

  test("a 200 that is not a JSON object is an error, not a response", async () => {
    respond(200, "text/html", "<html>portal</html>");
    assert.equal((await rejection(unary("t", "GetMe", {}))).code, "unknown");
    respond(200, "application/json", "{not json");
    assert.equal((await rejection(unary("t", "GetMe", {}))).code, "internal");
    respond(200, "application/json", "[1]");
    assert.equal((await rejection(unary("t", "GetMe", {}))).code, "internal");
    respond(204, "application/json", null);
    assert.equal((await rejection(unary("t", "GetMe", {}))).code, "unknown");
  });

  test("no answer at all is unavailable; an abort stays an AbortError", async () => {
    answer = () => {
      throw new TypeError("fetch failed");
    };
    const error = await rejection(unary("t", "GetMe", {}));
    assert.equal(error.code, "unavailable");
    const controller = new AbortController();
    controller.abort();
    const aborted = await rejection(unary("t", "GetMe", {}, { signal: controller.signal }));
    assert.equal(aborted.name, "AbortError");
    assert.ok(!(aborted instanceof RpcError));
  });
});

describe("serverStream", () => {
  const end = (doc = {}) => encodeEnvelope(2, JSON.stringify(doc));
  const message = (doc) => encodeEnvelope(0, JSON.stringify(doc));

  async function run(options = {}) {
    const got = [];
    let opened = 0;
    const result = serverStream("tok", "WatchChannel", { channelId: "c" }, {
      onOpen: () => {
        opened += 1;
      },
      onMessage: (m) => got.push(m),
      ...options,
    });
    return { result, got, opened: () => opened };
  }

  test("sends one enveloped request and delivers each message until a clean end", async () => {
    stream([Buffer.concat([message({ n: 1 }), message({ n: 2 }), end()])]);
    const { result, got, opened } = await run();
    await result;
    assert.deepEqual(got, [{ n: 1 }, { n: 2 }]);
    assert.equal(opened(), 1);
    const [{ url, init }] = calls;
    assert.equal(url, "https://compass.test/prefix/compass.v1.CommsService/WatchChannel");
    assert.equal(init.headers["content-type"], "application/connect+json");
    const reader = new EnvelopeReader();
    reader.push(init.body);
    assert.deepEqual(reader.next(), { flags: 0, data: '{"channelId":"c"}' });
    assert.equal(reader.next(), null);
  });

  test("the same messages arrive however the body is chunked", async () => {
    const docs = cases(31, 20, (r) => ({ text: string(r, 60) }));
    const bytes = Buffer.concat([...docs.map(message), end()]);
    for (const size of [1, 2, 3, 5, 7, 64, bytes.length]) {
      const chunks = [];
      for (let at = 0; at < bytes.length; at += size) chunks.push(new Uint8Array(bytes.subarray(at, at + size)));
      stream(chunks);
      const { result, got } = await run();
      await result;
      assert.deepEqual(got, docs, `chunks of ${size}`);
    }
  });

  test("an error end frame rejects with its code and violations, after the messages", async () => {
    const error = {
      code: "permission_denied",
      message: "not yours",
      details: [{ type: "google.rpc.BadRequest", debug: { fieldViolations: [{ field: "channel_id", description: "?" }] } }],
    };
    stream([message({ n: 1 }), end({ error })]);
    const { result, got } = await run();
    const rejected = await rejection(result);
    assert.equal(rejected.code, "permission_denied");
    assert.equal(rejected.message, "not yours");
    assert.deepEqual(rejected.violations, [{ field: "channel_id", description: "?", questionId: "" }]);
    assert.deepEqual(got, [{ n: 1 }]);
  });

  test("a body that ends without an end frame is internal (conformance: server-stream/no-end-stream)", async () => {
    stream([message({ n: 1 })]);
    const { result, got } = await run();
    assert.equal((await rejection(result)).code, "internal");
    assert.deepEqual(got, [{ n: 1 }]);
  });

  test("a body cut inside a frame or its prefix is internal (conformance: incomplete-message)", async () => {
    const whole = message({ n: 2 });
    for (const cut of [whole.subarray(0, 3), whole.subarray(0, whole.length - 1)]) {
      stream([message({ n: 1 }), cut]);
      const { result, got } = await run();
      assert.equal((await rejection(result)).code, "internal");
      assert.deepEqual(got, [{ n: 1 }]);
    }
  });

  test("a compressed frame or one that is not JSON is internal", async () => {
    stream([encodeEnvelope(1, "{}"), end()]);
    assert.equal((await rejection((await run()).result)).code, "internal");
    stream([encodeEnvelope(0, "{nope"), end()]);
    assert.equal((await rejection((await run()).result)).code, "internal");
    stream([encodeEnvelope(2, "[]")]);
    assert.equal((await rejection((await run()).result)).code, "internal");
  });

  test("an end frame with an invalid error is unknown", async () => {
    stream([end({ error: { code: "bogus" } })]);
    assert.equal((await rejection((await run()).result)).code, "unknown");
  });

  test("a non-200 answer is refused before opening: its JSON error, else the status's code", async () => {
    for (const type of ["application/json", "application/connect+json"]) {
      respond(401, type, '{"code":"unauthenticated","message":"who?"}');
      const { result, opened } = await run();
      const error = await rejection(result);
      assert.deepEqual([error.code, error.message], ["unauthenticated", "who?"]);
      assert.equal(opened(), 0);
    }
    for (const status of [400, 404, 429, 500, 502, 503, 504]) {
      respond(status, "text/html", "<p>proxy</p>");
      const { result, opened } = await run();
      assert.equal((await rejection(result)).code, PROTOCOL_TABLE[status] ?? "unknown", `HTTP ${status}`);
      assert.equal(opened(), 0);
    }
  });

  test("a 200 that is not a Connect stream is unknown and never opens", async () => {
    respond(200, "text/html", "<html>portal</html>");
    const { result, opened } = await run();
    assert.equal((await rejection(result)).code, "unknown");
    assert.equal(opened(), 0);
    stream([end()], { contentType: "Application/Connect+JSON; charset=utf-8" });
    await (await run()).result; // the media type is case-insensitive, parameters allowed
  });

  test("a connection lost mid-stream is unavailable (retryable); an abort stays an AbortError", async () => {
    stream([message({ n: 1 })], { fail: new TypeError("network error") });
    const { result, got } = await run();
    assert.equal((await rejection(result)).code, "unavailable");
    assert.deepEqual(got, [{ n: 1 }]);
    stream([message({ n: 1 })], { fail: new DOMException("aborted", "AbortError") });
    assert.equal((await rejection((await run()).result)).name, "AbortError");
  });
});
