// @ts-check
// CommsService for the page: the client generated from proto/ (ui/gen, protoc-gen-es) on
// connect-web's Connect transport, in Connect-JSON, with the person's bearer token; its
// failures as RpcError, whose code is the protocol's lower-case name ("invalid_argument") and
// which carries the field violations of compass.v1.InvalidFields (else google.rpc.BadRequest).
// The protocol itself (envelopes, the HTTP-to-code table, end-of-stream messages, error
// details) is connect-web's; what is written here is only what this page wants of it.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";

import { CommsService, InvalidFieldsSchema } from "../gen/compass/v1/comms_pb.js";
import { BadRequestSchema } from "../gen/google/rpc/error_details_pb.js";

/**
 * @typedef {import("@connectrpc/connect").Client<typeof CommsService>} Comms
 * @typedef {import("../gen/compass/v1/comms_pb.js").Ask} Ask
 */

/**
 * A field violation; `questionId` is the question it is about ("" when the server did not say:
 * a google.rpc.BadRequest, or not about one question).
 * @typedef {{field: string, description: string, questionId: string}} Violation
 */

/** A failed call: `code` is the lower-case Connect code ("invalid_argument", ...). */
export class RpcError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {Violation[]} [violations]
   * @param {boolean} [fromServer] the code is the server's own (a Connect error it sent)
   */
  constructor(code, message, violations = [], fromServer = false) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.violations = violations;
    /** Whether the server itself said `code` (a Connect error in its JSON), rather than
     * connect-web deriving it from an HTTP status or a broken connection: a proxy's bare
     * 401/403 is not the server judging the token. */
    this.fromServer = fromServer;
    /** Set by the caller when a call that closes an ask was refused because the ask had
     * closed meanwhile (FAILED_PRECONDITION): that ask as stored.
     * @type {Ask | null} */
    this.closedAsk = null;
  }
}

/**
 * The protocol's name of a Connect code: Code.InvalidArgument is "invalid_argument".
 * @param {Code} code
 */
export function codeName(code) {
  return (Code[code] ?? "Unknown").replace(/[A-Z]/g, (c, at) => (at ? "_" : "") + c.toLowerCase());
}

/** Every Connect code by its protocol name. */
export const CODES = Object.freeze(
  Object.values(Code)
    .filter((value) => typeof value === "number")
    .map((value) => codeName(/** @type {Code} */ (value))),
);

/**
 * The media type of a Content-Type header, lower-cased, without parameters ("" if none).
 * @param {string | null} header
 */
export function mediaType(header) {
  return (header ?? "").split(";", 1)[0].trim().toLowerCase();
}

/** @param {unknown} error */
function isAbort(error) {
  return error instanceof DOMException && error.name === "AbortError";
}

/**
 * `fetch` as the page uses it: nothing cached, no cookies (the token travels in its header);
 * no HTTP answer at all is gRPC's UNAVAILABLE (transient: the page retries), not connect-web's
 * UNKNOWN.
 * @param {typeof globalThis.fetch} fetch
 * @returns {typeof globalThis.fetch}
 */
function forPage(fetch) {
  return async (input, init) => {
    try {
      return await fetch(input, { ...init, cache: "no-store", credentials: "omit" });
    } catch (error) {
      if (isAbort(error)) throw error;
      throw new ConnectError("The server could not be reached.", Code.Unavailable);
    }
  };
}

/**
 * CommsService with `token` (the page's own address is where the service is, also when it
 * is served under a path prefix). `fetch` replaces the browser's (tests).
 * @param {string} token
 * @param {{baseUrl?: string, fetch?: typeof globalThis.fetch}} [options]
 * @returns {Comms}
 */
export function comms(
  token,
  { baseUrl = new URL(".", document.baseURI).href, fetch = (input, init) => globalThis.fetch(input, init) } = {},
) {
  const transport = createConnectTransport({
    baseUrl,
    fetch: forPage(fetch),
    interceptors: [
      (next) => (request) => {
        request.header.set("authorization", `Bearer ${token}`);
        return next(request);
      },
    ],
  });
  return createClient(CommsService, transport);
}

/**
 * `error` as an RpcError when it is a ConnectError; anything else as it is.
 * @param {unknown} error
 * @returns {unknown}
 */
export function rpcError(error) {
  if (!(error instanceof ConnectError)) return error;
  const code = codeName(error.code);
  const type = mediaType(error.metadata.get("content-type"));
  const fromServer = type === "application/json" || type === "application/connect+json";
  // An empty message is the protocol's "none": say the code instead.
  const message = error.rawMessage || `The server said ${code.replaceAll("_", " ")}.`;
  return new RpcError(code, message, violations(error), fromServer);
}

/**
 * The field violations `error` carries: compass.v1.InvalidFields names the question of each;
 * a server without it sends only google.rpc.BadRequest (no question ids then).
 * @param {ConnectError} error
 * @returns {Violation[]}
 */
function violations(error) {
  const invalid = error.findDetails(InvalidFieldsSchema);
  if (invalid.length) {
    return invalid.flatMap((detail) =>
      detail.fields.map(({ field, description, questionId }) => ({ field, description, questionId })),
    );
  }
  return error.findDetails(BadRequestSchema).flatMap((detail) =>
    detail.fieldViolations.map(({ field, description }) => ({ field, description, questionId: "" })),
  );
}

/**
 * Awaits a unary call; it fails with RpcError.
 * @template T
 * @param {Promise<T>} call
 * @returns {Promise<T>}
 */
export async function unary(call) {
  try {
    return await call;
  } catch (error) {
    throw rpcError(error);
  }
}

/**
 * The messages of a server stream; it fails with RpcError.
 * @template T
 * @param {AsyncIterable<T>} messages
 * @returns {AsyncGenerator<T>}
 */
export async function* stream(messages) {
  try {
    yield* messages;
  } catch (error) {
    throw rpcError(error);
  }
}
