// The main module of every Code Mode program's Deno process (presenters/deno_sandbox.py starts it with
// every permission denied). It is the only part of the program's world that can talk to the host, and it
// talks only over stdin/stdout, one JSON message per line:
//   host → prelude:  {"type":"program","source":<TypeScript module>,"names":[<tool names>]}   (first line)
//                    {"type":"reply","id":<n>,"ok":true,"value":<JSON>}
//                    {"type":"reply","id":<n>,"ok":false,"error":<message>,"code":<code>}
//   prelude → host:  "\x1e" + {"type":"call","id":<n>,"tool":<name>,"args":<JSON>}
//                    "\x1e" + {"type":"done","ok":true,"value":<JSON>} | {"type":"done","ok":false,"error":…}
// Any other line on stdout is the program's printed output. The host assigns each call its own id and
// decides whether the tool may be called at all: a line forged by the program can do no more than
// calling the function would.
//
// The program module is imported from a data: URL at run time, not named on the command line: Deno
// loads a main module's static graph (a literal `import("file:///…")` included) without a permission
// check, while everything a run-time import loads is checked.

const deno = globalThis.Deno;
const stdout = deno.stdout;
const stdinReader = deno.stdin.readable.getReader();
const exit = deno.exit;
const inspect = deno.inspect;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const MARK = "\x1e";
const PROGRAM_URL = "program.ts";

// What the program must not reach: Deno's namespace (stdio, exit, every API), Web Storage and the Cache
// API (they persist to disk without any permission), and Workers (a second isolate, a second heap).
for (const name of ["Deno", "localStorage", "sessionStorage", "caches", "Worker"]) {
  try {
    delete globalThis[name];
  } catch {
    // A global that cannot be deleted stays; every permission is denied anyway.
  }
}

function writeLine(text) {
  if (outbox.length) flush(); // printed output stays in order with the messages before it
  const bytes = encoder.encode(text + "\n");
  let written = 0;
  while (written < bytes.length) written += stdout.writeSync(bytes.subarray(written));
}

// Messages sent in one synchronous burst (a Promise.all of many calls) leave in one write.
let outbox = [];
function flush() {
  if (outbox.length === 0) return;
  const lines = outbox.join("\n");
  outbox = [];
  writeLine(lines);
}

function send(message) {
  if (outbox.length === 0) queueMicrotask(flush);
  outbox.push(MARK + JSON.stringify(message));
}

let buffered = "";
async function readMessage() {
  for (;;) {
    const end = buffered.indexOf("\n");
    if (end >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      if (line.trim()) return JSON.parse(line);
      continue;
    }
    const { value, done } = await stdinReader.read();
    if (done) return null;
    buffered += decoder.decode(value, { stream: true });
  }
}

// console.error/warn/trace/… print to stdout like console.log, so the host sees one ordered output.
const print = (...items) => {
  writeLine(items.map((item) => (typeof item === "string" ? item : inspect(item, { depth: 6, colors: false }))).join(" "));
};
for (const method of ["log", "info", "debug", "warn", "error", "trace"]) console[method] = print;

class ToolError extends Error {
  constructor(tool, message, code) {
    super(message);
    this.name = "ToolError";
    this.tool = tool;
    this.code = code ?? null;
  }
}
globalThis.ToolError = ToolError;

const pending = new Map();
let nextId = 0;

function callTool(tool, args) {
  const id = ++nextId;
  let payload;
  try {
    payload = JSON.parse(JSON.stringify(args === undefined ? {} : args));
  } catch (error) {
    return Promise.reject(new ToolError(tool, `the arguments of ${tool}() are not JSON: ${error.message}`, "INVALID_ARGS"));
  }
  return new Promise((resolve, reject) => {
    pending.set(id, { tool, resolve, reject });
    send({ type: "call", id, tool, args: payload });
  });
}

async function serveReplies() {
  for (;;) {
    const message = await readMessage();
    if (message === null) return;
    const waiter = message && message.type === "reply" ? pending.get(message.id) : undefined;
    if (waiter === undefined) continue;
    pending.delete(message.id);
    if (message.ok) waiter.resolve(message.value);
    else waiter.reject(new ToolError(waiter.tool, String(message.error), message.code));
  }
}

function utf8Base64(text) {
  const bytes = encoder.encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

let programUrl = "data:application/typescript;base64,";
// Deno names the module by its data: URL, shortened in stack traces ("data:…;base64,AbC......xYz="):
// either form becomes a short name. The program's first line shares the module's first line, so line
// numbers are the program's own.
const DATA_URL = /data:application\/typescript;base64,[A-Za-z0-9+/=.]+/g;

function describe(error) {
  const clean = (text) => String(text).replace(DATA_URL, PROGRAM_URL);
  if (!(error instanceof Error)) return clean(typeof error === "string" ? error : inspect(error, { depth: 4, colors: false }));
  const frames = clean(error.stack ?? "")
    .split("\n")
    .filter((line) => line.trimStart().startsWith("at ") && line.includes(PROGRAM_URL))
    .slice(0, 5);
  return [clean(`${error.name}: ${error.message}`), ...frames].join("\n");
}

// An exception nothing catches (thrown from a timer or a microtask) ends the program as its failure.
globalThis.addEventListener("error", (event) => {
  event.preventDefault();
  send({ type: "done", ok: false, error: `Uncaught ${describe(event.error ?? event.message)}` });
  flush();
  exit(0);
});

globalThis.addEventListener("unhandledrejection", (event) => {
  // An un-awaited call that failed is the program's business: say so, do not end the run.
  event.preventDefault();
  print(`(unhandled rejection) ${describe(event.reason)}`);
});

const program = await readMessage();
if (program === null || program.type !== "program") exit(3);
const tools = Object.create(null);
for (const name of program.names) tools[name] = (args) => callTool(name, args);
Object.freeze(tools);
serveReplies();

programUrl += utf8Base64(program.source);
let outcome;
try {
  const module = await import(programUrl);
  const value = await module.default(tools);
  let json;
  try {
    json = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new TypeError(`the program's return value is not JSON: ${error.message}`);
  }
  outcome = { type: "done", ok: true, value: JSON.parse(json ?? "null") };
} catch (error) {
  outcome = { type: "done", ok: false, error: describe(error) };
}
send(outcome);
flush();
exit(0);
