// The messages generated from proto/ (ui/gen), for building fixtures the way the client
// decodes them: every field present, enums as numbers, Timestamps as messages. The runtime is
// imported by path: the UI's packages are linked at ui/node_modules (scripts/ensure-ui-tools),
// which Node's resolver does not search from tests/ui.

import { create } from "../../ui/node_modules/@bufbuild/protobuf/dist/esm/index.js";
import { timestampFromMs } from "../../ui/node_modules/@bufbuild/protobuf/dist/esm/wkt/index.js";
import * as comms from "../../ui/gen/compass/v1/comms_pb.js";

export { comms, create, timestampFromMs };

/** An Ask as the client decodes it, from the fields given (questions as plain objects too). */
export function askOf(init = {}) {
  const { questions = [], ...rest } = init;
  return create(comms.AskSchema, { ...rest, questions: questions.map(questionOf) });
}

/** An AskQuestion from the fields given. */
export function questionOf(init = {}) {
  return create(comms.AskQuestionSchema, init);
}

/** A Timestamp from an RFC 3339 string. */
export function at(rfc3339) {
  return timestampFromMs(Date.parse(rfc3339));
}

export { toBinary } from "../../ui/node_modules/@bufbuild/protobuf/dist/esm/index.js";
export * as rpcDetails from "../../ui/gen/google/rpc/error_details_pb.js";
