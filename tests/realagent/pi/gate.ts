/**
 * A test bed's extension for pi (not Compass's): a permission gate that asks before every
 * bash command, the way pi's examples/extensions/permission-gate.ts does, so that a dialog
 * that belongs to no ask call reaches the bridge (tests/realagent/test_roundtrip_pi.py).
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export default function gate(pi: ExtensionAPI) {
	pi.on("tool_call", async (event, ctx) => {
		if (event.toolName !== "bash") return undefined;
		const command = String((event.input as { command?: unknown }).command ?? "");
		const ok = await ctx.ui.confirm("Run this command?", command);
		return ok ? undefined : { block: true, reason: "Blocked by the user" };
	});
}
