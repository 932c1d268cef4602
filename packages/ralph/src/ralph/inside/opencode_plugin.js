// ralph's hooks for opencode, loaded from its managed settings (agents/opencode.py): each
// tool call goes to ralph's hook program (hookrun.py) before and after it runs, and a
// session that starts resets the stop checklist. A refusal is thrown, which opencode
// reports to the model as the tool's error. The hook program's argv comes as the plugin's
// option; without one this plugin does nothing. The stop checklist itself is rerun.py's:
// opencode has no event that can hold the agent's turn open.
import { spawnSync } from "node:child_process";

export const RalphHooks = async (input, options) => {
  const argv = Array.isArray(options?.argv) ? options.argv : [];
  const guard = options?.guard !== false;
  const hook = (event, payload) => {
    if (argv.length === 0) return null;
    const done = spawnSync(argv[0], [...argv.slice(1), event], {
      input: JSON.stringify(payload),
      encoding: "utf8",
      timeout: 120000,
    });
    try {
      return JSON.parse(done.stdout || "null");
    } catch {
      return null;
    }
  };
  return {
    "tool.execute.before": async (call, output) => {
      if (!guard) return;
      const answer = hook("pre-tool-use", {
        ...call,
        args: output?.args,
        directory: input?.directory,
      });
      if (answer && typeof answer.deny === "string") throw new Error(answer.deny);
    },
    "tool.execute.after": async (call, output) => {
      hook("post-tool-use", { ...call, output, directory: input?.directory });
    },
    event: async ({ event }) => {
      if (event?.type !== "session.created") return;
      const session = event.properties?.sessionID ?? event.properties?.info?.id;
      hook("session-start", { event: "session.created", sessionID: session });
    },
  };
};
