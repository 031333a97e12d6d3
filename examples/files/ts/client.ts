// The TypeScript side of `examples/files/`: spawns the Rust file service (`files_server`), calls it
// through the generated `FilesClient`, and serves `Editor` for its calls back. Nothing but the
// generated `files.ts` and vscode-jsonrpc.
//
//   npm ci && npx tsc -p . && node out/client.js ../../../target/debug/examples/files_server
//
// Prints one JSON line, {"ok":true,"checks":[..]}, and exits 0; or {"ok":false,"failed":..} and
// exits 1. Every wait is bounded.

import { spawn } from "node:child_process";
import * as assert from "node:assert/strict";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, Trace } from "vscode-jsonrpc/node";
import { DeniedError, Editor, FileNotFoundError, FilesClient, MessageLevel, OpenDocument, serveEditor } from "./files";

const STEP_MS = 10_000;

/** `promise`, or an error after `STEP_MS`. */
function within<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The editor this side serves: answers questions as told, records messages. */
class TestEditor implements Editor {
  answer = true;
  readonly questions: string[] = [];
  readonly messages: Array<[MessageLevel, string]> = [];
  private onMessage: (() => void) | undefined;

  confirm(question: string): boolean {
    this.questions.push(question);
    return this.answer;
  }

  showMessage(level: MessageLevel, text: string): void {
    this.messages.push([level, text]);
    this.onMessage?.();
  }

  async *openDocuments(): AsyncGenerator<OpenDocument> {
    yield { path: "notes.md", text: "unsaved notes\n" };
    yield { path: "src/lib.rs", text: "pub fn answer() -> u32 {\n    43\n}\n" };
  }

  /** Resolves once a message has arrived. */
  nextMessage(): Promise<void> {
    return new Promise((resolve) => {
      this.onMessage = resolve;
    });
  }
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  if (command === undefined) {
    process.stderr.write("usage: node out/client.js <files_server> [args...]\n");
    process.exit(2);
  }
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));

  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  // The trace shows what went on the wire (here: that an abandoned stream is aborted).
  const sent: string[] = [];
  void connection.trace(Trace.Messages, { log: (message: string) => sent.push(message) });
  const editor = new TestEditor();
  serveEditor(connection, editor);
  connection.listen();
  const files = new FilesClient(connection);

  const checks: string[] = [];
  let current = "start";
  const check = async (name: string, body: () => Promise<void>): Promise<void> => {
    current = name;
    await body();
    checks.push(name);
  };

  try {
    await check("rpc.discover answers the OpenRPC document", async () => {
      const doc = await within("rpc.discover", connection.sendRequest<{ openrpc: string; methods: Array<{ name: string }> }>("rpc.discover"));
      assert.equal(doc.openrpc, "1.3.2");
      assert.ok(doc.methods.some((m) => m.name === "files/readTextFile"));
    });

    await check("a call: readTextFile", async () => {
      const text = await within("readTextFile", files.readTextFile({ path: "README.md" }));
      assert.equal(text, "# A workspace\n");
    });

    await check("a typed error: FileNotFoundError with its code and data", async () => {
      const error = await within("readTextFile", files.readTextFile({ path: "missing.txt" }).then(() => undefined, (e: unknown) => e));
      assert.ok(error instanceof FileNotFoundError, `expected a FileNotFoundError, got ${String(error)}`);
      assert.equal(error.code, FileNotFoundError.code);
      assert.equal(error.code, -32010);
      assert.deepEqual(error.data, { kind: "notFound", path: "missing.txt" });
    });

    await check("a call back into TypeScript: writeTextFile asks editor/confirm", async () => {
      await within("writeTextFile new", files.writeTextFile({ path: "new.txt", text: "fresh\n" }));
      assert.deepEqual(editor.questions, [], "a new file is written without asking");
      await within("writeTextFile overwrite", files.writeTextFile({ path: "new.txt", text: "second\n" }));
      assert.deepEqual(editor.questions, ["Overwrite new.txt?"]);
      assert.equal(await within("read back", files.readTextFile({ path: "new.txt" })), "second\n");
    });

    await check("a refusal from TypeScript comes back as DeniedError", async () => {
      editor.answer = false;
      const error = await within("writeTextFile", files.writeTextFile({ path: "new.txt", text: "third\n" }).then(() => undefined, (e: unknown) => e));
      editor.answer = true;
      assert.ok(error instanceof DeniedError, `expected a DeniedError, got ${String(error)}`);
      assert.deepEqual(error.data, { kind: "denied", path: "new.txt" });
      assert.equal(await within("read back", files.readTextFile({ path: "new.txt" })), "second\n");
    });

    await check("a notification each way: files/log, then editor/showMessage", async () => {
      const shown = editor.nextMessage();
      await files.log({ message: "hello from TypeScript" });
      await within("editor/showMessage", shown);
      assert.deepEqual(editor.messages, [["info", "logged: hello from TypeScript"]]);
    });

    await check("progress: index reports every file before its answer", async () => {
      const reports: Array<[string, number, number]> = [];
      const count = await within("index", files.index({ prefix: "src/", progress: (r) => reports.push([r.path, r.done, r.total]) }));
      assert.equal(count, 2);
      assert.deepEqual(reports, [["src/lib.rs", 1, 2], ["src/main.rs", 2, 2]]);
      // Without a callback the token is null, and nothing is reported.
      assert.equal(await within("index", files.index({ prefix: "" })), 4);
    });

    await check("a stream: list is pulled with $/enumerator/next", async () => {
      const entries: string[] = [];
      for await (const entry of files.list({ prefix: "src/" })) {
        entries.push(`${entry.path}:${entry.size}`);
      }
      assert.deepEqual(entries, ["src/lib.rs:34", "src/main.rs:13"]);
    });

    await check("a stream left early is aborted with $/enumerator/abort", async () => {
      const before = sent.filter((line) => line.includes("'$/enumerator/abort'")).length;
      for await (const entry of files.list({ prefix: "" })) {
        assert.equal(entry.path, "README.md");
        break;
      }
      const after = sent.filter((line) => line.includes("'$/enumerator/abort'")).length;
      assert.equal(after, before + 1, `sent: ${JSON.stringify(sent.slice(-6))}`);
      // The connection goes on.
      assert.equal(await within("readTextFile", files.readTextFile({ path: "README.md" })), "# A workspace\n");
    });

    await check("a stream argument: append pulls the lines from TypeScript", async () => {
      async function* lines(): AsyncGenerator<string> {
        yield "one";
        yield "two";
        yield "three";
      }
      assert.equal(await within("append", files.append({ path: "new.txt", lines: lines() })), 3);
      assert.equal(await within("read back", files.readTextFile({ path: "new.txt" })), "second\none\ntwo\nthree\n");
    });

    await check("a synchronous stream argument is pulled in batches", async () => {
      const pulls = (): number => sent.filter((line) => line.includes("Received request '$/enumerator/next")).length;
      const before = pulls();
      assert.equal(await within("append", files.append({ path: "new.txt", lines: ["four", "five", "six"] })), 3);
      // One `$/enumerator/next` answered all three (and that it finished), where an async generator takes four.
      assert.equal(pulls(), before + 1, `sent: ${JSON.stringify(sent.slice(-8))}`);
      assert.equal(await within("read back", files.readTextFile({ path: "new.txt" })), "second\none\ntwo\nthree\nfour\nfive\nsix\n");
    });

    await check("a stream served by TypeScript: saveAll pulls editor/openDocuments", async () => {
      assert.equal(await within("saveAll", files.saveAll()), 2);
      assert.equal(await within("read back", files.readTextFile({ path: "notes.md" })), "unsaved notes\n");
    });

    await check("exit 0 on EOF", async () => {
      connection.end();
      connection.dispose();
      child.stdin.end();
      assert.equal(await within("exit", exited), 0);
    });

    process.stdout.write(`${JSON.stringify({ ok: true, checks })}\n`);
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stdout.write(`${JSON.stringify({ ok: false, failed: current, error: message, checks, stderr })}\n`);
    child.kill();
    process.exitCode = 1;
  }
}

void main();
