// ui/src/rpc.js on connect-web, with a scripted fetch in place of the network: what reaches
// the server (the address, the bearer token, Connect-JSON), and what the page makes of each
// kind of failure (the code, whether the server said it, the field violations).

import assert from "node:assert/strict";
import { test } from "node:test";

import { stopsChannel } from "../../ui/src/page.js";
import { CODES, RpcError, codeName, comms, stream, unary } from "../../ui/src/rpc.js";
import { comms as pb, create, rpcDetails, toBinary } from "./_proto.mjs";

const BASE = "http://compass.test/prefix/";

/** A client whose fetch answers with `answer(url, init)`; `seen` collects the requests. */
function scripted(answer) {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url: String(url), init });
    init.signal?.throwIfAborted(); // as a browser's fetch does
    return answer(url, init);
  };
  return { client: comms("cmp_token", { baseUrl: BASE, fetch }), seen };
}

async function failure(call) {
  try {
    await call;
  } catch (error) {
    return error;
  }
  assert.fail("the call succeeded");
}

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const base64 = (bytes) => Buffer.from(bytes).toString("base64").replace(/=+$/, "");

test("a call is Connect-JSON to the page's own address, with the bearer token", async () => {
  const { client, seen } = scripted(() => json(200, { accountId: "acc_1", name: "Ada" }));
  const me = await unary(client.getMe({}));
  assert.equal(me.name, "Ada");
  const [{ url, init }] = seen;
  assert.equal(url, `${BASE}compass.v1.CommsService/GetMe`);
  const headers = new Headers(init.headers);
  assert.equal(headers.get("authorization"), "Bearer cmp_token");
  assert.equal(headers.get("content-type"), "application/json");
  assert.equal(headers.get("connect-protocol-version"), "1");
  assert.equal(init.method, "POST");
  assert.equal(init.cache, "no-store");
  assert.equal(init.credentials, "omit");
});

test("the codes are the protocol's sixteen, by the protocol's names", () => {
  assert.equal(CODES.length, 16);
  assert.ok(CODES.includes("invalid_argument") && CODES.includes("deadline_exceeded"));
  assert.equal(codeName(3), "invalid_argument");
});

test("a bare HTTP status (a proxy's page) is its code by the protocol's table, not the server's", async () => {
  const table = { 400: "internal", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented", 408: "unknown", 429: "unavailable", 500: "unknown", 502: "unavailable", 503: "unavailable", 504: "unavailable" };
  for (const [status, code] of Object.entries(table)) {
    const { client } = scripted(() => new Response("<html>no</html>", { status: Number(status), headers: { "content-type": "text/html" } }));
    const error = await failure(unary(client.listChannels({})));
    assert.ok(error instanceof RpcError, status);
    assert.equal(error.code, code, status);
    assert.equal(error.fromServer, false, status);
    // What it does to a channel view: proxies' 5xx/429 and a bare 400 are retried.
    assert.equal(stopsChannel(error.code), status === "401" || status === "403", status);
  }
});

test("the server's Connect error is its code and message, said by the server", async () => {
  const { client } = scripted(() => json(401, { code: "unauthenticated", message: "unknown token" }));
  const error = await failure(unary(client.listChannels({})));
  assert.equal(error.code, "unauthenticated");
  assert.equal(error.message, "unknown token");
  assert.equal(error.fromServer, true);
  const empty = await failure(unary(scripted(() => json(404, { code: "not_found" })).client.getAsk({ askId: "a" })));
  assert.equal(empty.message, "The server said not found.");
});

test("field violations come from InvalidFields, with their question; else from BadRequest", async () => {
  const invalid = create(pb.InvalidFieldsSchema, {
    fields: [{ field: "answers[1].custom_text", description: 'question "db": too long', questionId: "db" }],
  });
  const bad = create(rpcDetails.BadRequestSchema, {
    fieldViolations: [{ field: "answers[1].custom_text", description: "too long", reason: "r" }],
  });
  const details = [
    { type: "google.rpc.BadRequest", value: base64(toBinary(rpcDetails.BadRequestSchema, bad)) },
    { type: "compass.v1.InvalidFields", value: base64(toBinary(pb.InvalidFieldsSchema, invalid)) },
  ];
  const both = scripted(() => json(400, { code: "invalid_argument", message: "m", details }));
  const error = await failure(unary(both.client.respondToAsk({ askId: "a", answers: [] })));
  assert.deepEqual(error.violations, [{ field: "answers[1].custom_text", description: 'question "db": too long', questionId: "db" }]);
  const older = scripted(() => json(400, { code: "invalid_argument", message: "m", details: details.slice(0, 1) }));
  const fallback = await failure(unary(older.client.respondToAsk({ askId: "a", answers: [] })));
  assert.deepEqual(fallback.violations, [{ field: "answers[1].custom_text", description: "too long", questionId: "" }]);
});

test("no answer at all is UNAVAILABLE (retried), and an abort stays an abort", async () => {
  const { client } = scripted(() => {
    throw new TypeError("Failed to fetch");
  });
  const error = await failure(unary(client.getMe({})));
  assert.equal(error.code, "unavailable");
  assert.equal(error.message, "The server could not be reached.");
  const controller = new AbortController();
  controller.abort();
  const aborted = await failure(unary(scripted(() => json(200, {})).client.getMe({}, { signal: controller.signal })));
  assert.equal(aborted.code, "canceled");
});

/** A Connect stream body: each message enveloped, then the end-of-stream message. */
function streamBody(messages, end) {
  const frame = (flags, text) => {
    const payload = new TextEncoder().encode(text);
    const bytes = new Uint8Array(5 + payload.length);
    bytes[0] = flags;
    new DataView(bytes.buffer).setUint32(1, payload.length);
    bytes.set(payload, 5);
    return bytes;
  };
  return Buffer.concat([...messages.map((m) => frame(0, JSON.stringify(m))), frame(2, JSON.stringify(end))]);
}

test("WatchChannel: messages, the keepalive, and an error at the end of the stream", async () => {
  const body = streamBody(
    [{ message: { messageId: "m1", revision: "7" } }, { caughtUp: true }],
    { error: { code: "permission_denied", message: "not yours" } },
  );
  const { client, seen } = scripted(
    () => new Response(body, { status: 200, headers: { "content-type": "application/connect+json" } }),
  );
  const got = [];
  const error = await failure(
    (async () => {
      for await (const response of stream(client.watchChannel({ channelId: "ch", afterRevision: 5n }))) got.push(response);
    })(),
  );
  assert.equal(got[0].message.revision, 7n);
  assert.equal(got[1].caughtUp, true);
  assert.equal(error.code, "permission_denied");
  assert.equal(error.message, "not yours");
  assert.equal(error.fromServer, true);
  const sent = new Uint8Array(await new Response(seen[0].init.body).arrayBuffer());
  assert.deepEqual(JSON.parse(new TextDecoder().decode(sent.subarray(5))), { channelId: "ch", afterRevision: "5" });
});
