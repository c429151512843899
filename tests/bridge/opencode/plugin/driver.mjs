// Runs Compass's OpenCode plugin (compass_bridge/opencode/plugin/compass.js) under Node with a
// fake OpenCode client, for tests/bridge/opencode/test_plugin.py. argv[2] is a JSON scenario:
//   {"plugin": path, "options": {...}, "events": [event, ...], "post": {"error"?, "status"?},
//    "wait_posts"?: N, "dispose"?: bool, "wait_file"?: path}
// and it waits for every command the plugin started to end. Prints one JSON object: the
// client calls the plugin made ({posts, logs, toasts}) and its hooks' names.
import childProcess from "node:child_process"
import { existsSync } from "node:fs"
import { syncBuiltinESMExports } from "node:module"

// Every command the plugin starts, to wait for its end ("close": the plugin's own handler,
// registered first, has run by then).
const ended = []
const spawn = childProcess.spawn
childProcess.spawn = (...args) => {
  const child = spawn(...args)
  ended.push(new Promise((resolve) => child.on("close", resolve)))
  return child
}
syncBuiltinESMExports()

const scenario = JSON.parse(process.argv[2])
const calls = { posts: [], logs: [], toasts: [] }
const client = {
  _client: {
    post: async (request) => {
      calls.posts.push({ url: request.url, path: request.path, body: request.body ?? null })
      if (scenario.post?.error) return { error: scenario.post.error, response: { status: scenario.post.status } }
      return { data: true, response: { status: 200 } }
    },
  },
  app: { log: async ({ body }) => void calls.logs.push(body) },
  tui: { showToast: async ({ body }) => void calls.toasts.push(body) },
}
const { CompassQuestions } = await import(scenario.plugin)
const hooks = await CompassQuestions({ client }, scenario.options)
const until = async (done, what) => {
  for (let i = 0; i < 1000; i++) {
    if (done()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`not within 10 s: ${what}`)
}
for (const event of scenario.events ?? []) await hooks.event?.({ event })
if (scenario.wait_posts) await until(() => calls.posts.length >= scenario.wait_posts, "the posts")
if (scenario.dispose) await hooks.dispose?.()
if (scenario.wait_file) await until(() => existsSync(scenario.wait_file), scenario.wait_file)
await Promise.all(ended)
await new Promise((resolve) => setImmediate(resolve)) // what the plugin chained on it (microtasks)
console.log(JSON.stringify({ ...calls, hooks: Object.keys(hooks) }))
process.exit(0)
