// Compass's OpenCode plugin: OpenCode's own `question` tool answered in Compass.
//
// `compass opencode install` puts it in OpenCode's config (docs/agents/opencode.md):
//
//   "plugin": [["/.../compass_bridge/opencode/plugin/compass.js",
//               {"command": ["/.../compass", "opencode", "ask", "--server", "...", ...]}]]
//
// For each `question.asked` it runs `command` and relays JSON lines both ways; everything
// else (the ask in Compass, following it, withdrawing it, the receipt) is that command's
// (compass_bridge/opencode/relay.py says the lines and why it is a process). Here:
//
// - to the command's stdin: the `question.asked` event, then the events of its session
//   that say OpenCode stopped waiting or how the tool call ended (FORWARDED), then
//   `{"type": "compass.result", "ok", "error"?}` after the reply it asked for;
// - from its stdout: `{"reply": string[][]}` or `{"reject": true}`, sent to OpenCode's
//   own routes (POST /question/{requestID}/reply or /reject) through the plugin's client,
//   in-process: no port is opened, none is needed;
// - when OpenCode shuts the plugin down, each command's stdin is closed (it withdraws its
//   ask); a command that fails has its last stderr line written to OpenCode's log and shown
//   as a toast, and OpenCode's own prompt for the question stays.
//
// It imports nothing but Node's child_process (Bun runs it inside OpenCode), so it needs no
// install of its own.

import { spawn } from "node:child_process"

const FORWARDED = new Set([
  "question.replied",
  "question.rejected",
  "message.part.updated",
  "session.status",
  "session.idle",
  "session.error",
  "session.deleted",
])
const SERVICE = "compass"

export const CompassQuestions = async ({ client }, options) => {
  const command = options?.command
  if (!Array.isArray(command) || command.length === 0 || !command.every((w) => typeof w === "string")) {
    await log(client, "error", "the plugin's options have no command: run `compass opencode install`")
    return {}
  }
  const running = new Map() // requestID -> one running command

  return {
    event: async ({ event }) => {
      if (event?.type === "question.asked") {
        const id = event.properties?.id
        if (typeof id === "string" && !running.has(id)) running.set(id, ask(client, command, event, () => running.delete(id)))
        return
      }
      if (!FORWARDED.has(event?.type)) return
      const props = event.properties ?? {}
      if (event.type === "message.part.updated" && props.part?.type !== "tool") return
      const sessionID = props.sessionID ?? props.part?.sessionID ?? props.info?.id
      for (const question of running.values()) if (question.sessionID === sessionID) question.send(event)
    },
    dispose: async () => {
      for (const question of running.values()) question.end()
    },
  }
}

function ask(client, command, event, done) {
  const requestID = event.properties.id
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
  let open = true
  let failed = false // it did not start: said once, by "error"
  let stderr = ""
  const send = (line) => {
    if (!open) return
    try {
      child.stdin.write(JSON.stringify(line) + "\n")
    } catch {
      open = false
    }
  }
  const end = () => {
    if (!open) return
    open = false
    child.stdin.end()
  }
  child.stdin.on("error", () => {
    open = false
  })
  child.on("error", (error) => {
    open = false
    failed = true
    void problem(client, `cannot run ${command[0]}: ${error.message}`)
    done()
  })
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000)
  })
  child.on("close", (code) => {
    open = false
    done()
    if (code !== 0 && !failed) {
      const last = stderr.trim().split("\n").pop() || `compass exited with status ${code}`
      void problem(client, last)
    }
  })
  let pending = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk) => {
    pending += chunk
    let newline
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      void answer(client, requestID, line).then(send)
    }
  })
  send(event)
  return { sessionID: event.properties.sessionID, send, end }
}

// One line of the command: the reply or the rejection, sent to OpenCode; what came of it.
async function answer(client, requestID, line) {
  let message
  try {
    message = JSON.parse(line)
  } catch {
    return { type: "compass.result", ok: false, error: "the plugin got a line that is not JSON" }
  }
  const reply = Array.isArray(message?.reply)
  if (!reply && message?.reject !== true) return { type: "compass.result", ok: false, error: "the plugin got neither a reply nor a rejection" }
  try {
    const result = await client._client.post({
      url: reply ? "/question/{requestID}/reply" : "/question/{requestID}/reject",
      path: { requestID },
      ...(reply ? { body: { answers: message.reply }, headers: { "Content-Type": "application/json" } } : {}),
    })
    if (result.error !== undefined) return { type: "compass.result", ok: false, error: describe(result) }
    return { type: "compass.result", ok: true }
  } catch (error) {
    return { type: "compass.result", ok: false, error: String(error?.message ?? error) }
  }
}

function describe(result) {
  const status = result.response?.status
  const error = result.error
  const text = typeof error === "string" ? error : error?.data?.message ?? error?.message ?? error?.name ?? JSON.stringify(error)
  return status ? `${status}: ${text}` : String(text)
}

async function problem(client, message) {
  await log(client, "error", message)
  try {
    await client.tui.showToast({ body: { title: "Compass", message, variant: "error" } })
  } catch {
    // no TUI to show it in (opencode serve): the log has it
  }
}

async function log(client, level, message) {
  try {
    await client.app.log({ body: { service: SERVICE, level, message } })
  } catch {
    // OpenCode's log is gone too: nothing left to tell
  }
}
