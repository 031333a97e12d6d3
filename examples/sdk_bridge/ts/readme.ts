// The README's TypeScript block, inside the function a user writes around it: compiled with the
// rest of this directory (`tsc --strict`, tests/interop/sdk_bridge.rs, which also checks that the
// lines between the markers are the README's), and in an ES module package under the tsconfig
// `tsc --init` writes (tests/rpc/openrpc.rs). Not run: `drive.ts` runs the same calls.
import { CancellationTokenSource } from "vscode-jsonrpc/node";
import { SessionClient, serveTools, type Tools } from "./bridge.js";
import { spawnCli } from "./jsonrpc_duplex_spawn.js";

export async function readme(tools: Tools): Promise<void> {
  // README: begin
  const cli = await spawnCli("sdk_bridge", [], { stderr: "capture" });
  serveTools(cli.connection, tools);
  cli.connection.listen();
  const session = new SessionClient(cli.connection);
  const source = new CancellationTokenSource();
  const task = session.longTask({ steps: 1000, progress: (step) => console.log(step.done) }, source.token);
  source.cancel();                            // rejects with a ResponseError, code -32800
  console.log(await cli.stop());              // the CLI's exit status
  // README: end
  await task.catch(() => undefined);
}
