// The TypeScript MCP SDK's client (@modelcontextprotocol/sdk as published, pinned in
// tests/realagent/mcp-sdk/) calling one tool on Compass's /mcp, as TypeScript-SDK agents do.
// Configuration in the environment: MCP_SDK_DIR (the installed package), MCP_URL,
// MCP_TOKEN, MCP_TOOL, MCP_ARGS (JSON), MCP_TIMEOUT_MS (the request timeout; the SDK's
// default is 60000), MCP_RESET ("1": resetTimeoutOnProgress). It prints one JSON object per
// line: {"event":"tools"}, each {"event":"progress"}, then {"event":"result"} or
// {"event":"error"}; elapsed is in seconds since the call started.
const sdk = process.env.MCP_SDK_DIR;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);

const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
});
const client = new Client({ name: "compass-test", version: "0" });
await client.connect(transport);
const tools = await client.listTools();
say({ event: "tools", names: tools.tools.map((tool) => tool.name) });

const started = Date.now();
const elapsed = () => (Date.now() - started) / 1000;
const options = {
  onprogress: (progress) => say({ event: "progress", progress: progress.progress, elapsed: elapsed() }),
  resetTimeoutOnProgress: process.env.MCP_RESET === "1",
};
if (process.env.MCP_TIMEOUT_MS) options.timeout = Number(process.env.MCP_TIMEOUT_MS);
try {
  const result = await client.callTool(
    { name: process.env.MCP_TOOL, arguments: JSON.parse(process.env.MCP_ARGS) },
    undefined,
    options,
  );
  say({ event: "result", result, elapsed: elapsed() });
} catch (error) {
  say({ event: "error", code: error.code, message: String(error.message), elapsed: elapsed() });
}
await client.close();
