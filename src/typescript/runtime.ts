// ---------------------------------------------------------------------------------------------
// Runtime: calls, typed errors, `$/progress` and StreamJsonRpc's enumerator protocol
// (`$/enumerator/next`, `$/enumerator/abort`), on vscode-jsonrpc alone.
// ---------------------------------------------------------------------------------------------

// section: RpcErrorClass
/** A typed error class: its code, and how to make one from an error response. */
interface RpcErrorClass {
  readonly code: number;
  new (message?: string, data?: never): ResponseError<unknown>;
}

// section: RpcEnumerable
/** What a stream travels as: a token to pull with, and values sent ahead. */
interface RpcEnumerable<T> {
  token?: unknown;
  values?: T[] | null;
}

// section: RpcNextAnswer
/** The answer to `$/enumerator/next`. */
interface RpcNextAnswer<T> {
  values?: T[] | null;
  finished?: boolean;
}

// section: RPC_NO_MARSHALED_OBJECT
const RPC_NO_MARSHALED_OBJECT = -32001;

// section: rpcProgressTokens
let rpcProgressTokens = 0;

// section: rpcTyped
/** An error response as the typed error of its code, when the method declares one. */
function rpcTyped(error: unknown, errors: readonly RpcErrorClass[]): unknown {
  if (!(error instanceof ResponseError)) {
    return error;
  }
  const { code, message, data } = error;
  const type = errors.find((e) => e.code === code);
  return type === undefined || error instanceof type ? error : new type(message, data as never);
}

// section: RpcCall
/** One outgoing call: its progress registrations and offered streams end with it. */
class RpcCall {
  private readonly cleanup: Array<() => void> = [];

  constructor(
    private readonly connection: MessageConnection,
    private readonly token: CancellationToken | undefined,
    private readonly errors: readonly RpcErrorClass[],
  ) {}

  /** A progress token whose reports go to `callback` until the answer (`null` without one). */
  progress<T>(callback: ((report: T) => void) | undefined): string | null {
    if (callback === undefined) {
      return null;
    }
    rpcProgressTokens += 1;
    const token = `jsonrpc-duplex-progress-${rpcProgressTokens}`;
    const registration = this.connection.onProgress(new ProgressType<T>(), token, callback);
    this.cleanup.push(() => registration.dispose());
    return token;
  }

  /** `items` offered to the peer, which pulls them until the answer. */
  stream<T>(items: AsyncIterable<T> | Iterable<T>): RpcEnumerable<T> {
    const offer = rpcGenerators(this.connection).offer(items);
    this.cleanup.push(offer.release);
    return { token: offer.token };
  }

  /** Send the request; its answer, or its error as the method's typed error. */
  async request<R>(method: string, structure: ParameterStructures, params: unknown[]): Promise<R> {
    const args: unknown[] = params.length === 0 ? [] : [structure, ...params];
    if (this.token !== undefined) {
      args.push(this.token);
    }
    try {
      return await this.connection.sendRequest<R>(method, ...args);
    } catch (error) {
      throw rpcTyped(error, this.errors);
    } finally {
      if (this.cleanup.length > 0) {
        for (const release of this.cleanup.splice(0)) {
          release();
        }
      }
    }
  }

  /** Send the request when first pulled; its result is a stream, pulled as it is consumed. */
  pull<T>(method: string, structure: ParameterStructures, params: unknown[]): AsyncGenerator<T, void, undefined> {
    return rpcPull<T>(this.connection, () => this.request<RpcEnumerable<T>>(method, structure, params), this.errors, this.token);
  }
}

// section: rpcPull
/** A stream the peer offers: pulled with `$/enumerator/next`, dropped early with `$/enumerator/abort`. */
async function* rpcPull<T>(
  connection: MessageConnection,
  open: () => Promise<RpcEnumerable<T>>,
  errors: readonly RpcErrorClass[],
  cancel?: CancellationToken,
): AsyncGenerator<T, void, undefined> {
  const enumerable = await open();
  const token = enumerable.token;
  let values: T[] = enumerable.values ?? [];
  let finished = token === undefined || token === null;
  try {
    for (;;) {
      for (const value of values) {
        yield value;
      }
      if (finished) {
        return;
      }
      let answer: RpcNextAnswer<T>;
      try {
        const args: unknown[] = [ParameterStructures.byPosition, token];
        if (cancel !== undefined) {
          args.push(cancel);
        }
        answer = await connection.sendRequest<RpcNextAnswer<T>>("$/enumerator/next", ...args);
      } catch (error) {
        // An error ends the sequence on both sides: nothing to abort.
        finished = true;
        throw rpcTyped(error, errors);
      }
      values = answer.values ?? [];
      finished = answer.finished === true;
      if (!finished && values.length === 0) {
        throw new Error("the peer answered $/enumerator/next with no values and not finished");
      }
    }
  } finally {
    if (!finished) {
      void connection.sendNotification("$/enumerator/abort", ParameterStructures.byPosition, token).catch(() => undefined);
    }
  }
}

// section: RpcGenerators
/** The streams this side offers on one connection, served to `$/enumerator/next`. */
class RpcGenerators {
  private nextToken = 1;
  private readonly offered = new Map<number, AsyncIterator<unknown> | Iterator<unknown>>();
  private readonly asynchronous = new Set<number>();

  constructor(connection: MessageConnection) {
    connection.onRequest("$/enumerator/next", async (...args: unknown[]) => {
      const token = rpcEnumeratorToken(args);
      const iterator = token === undefined ? undefined : this.offered.get(token);
      if (token === undefined || iterator === undefined) {
        return new ResponseError(RPC_NO_MARSHALED_OBJECT, "This remote object no longer exists.");
      }
      try {
        const item = await iterator.next();
        if (item.done === true) {
          this.offered.delete(token);
          this.asynchronous.delete(token);
          return { values: [], finished: true };
        }
        const values: unknown[] = [item.value];
        // A synchronous iterable is answered in batches: what it has, up to RPC_BATCH a time.
        if (!this.asynchronous.has(token)) {
          const sync = iterator as Iterator<unknown>;
          while (values.length < RPC_BATCH) {
            const more = sync.next();
            if (more.done === true) {
              this.offered.delete(token);
              this.asynchronous.delete(token);
              return { values, finished: true };
            }
            values.push(more.value);
          }
        }
        return { values, finished: false };
      } catch (error) {
        this.offered.delete(token);
        this.asynchronous.delete(token);
        if (error instanceof ResponseError) {
          return error;
        }
        return new ResponseError(-32000, error instanceof Error ? error.message : String(error));
      }
    });
    connection.onNotification("$/enumerator/abort", (...args: unknown[]) => {
      const token = rpcEnumeratorToken(args);
      if (token !== undefined) {
        this.release(token);
      }
    });
  }

  /** Offer `items`; `release` drops them (and ends their iterator) if the peer has not. */
  offer(items: AsyncIterable<unknown> | Iterable<unknown>): { token: number; release: () => void } {
    const token = this.nextToken;
    this.nextToken += 1;
    const asynchronous = Symbol.asyncIterator in items;
    const iterator = asynchronous ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
    this.offered.set(token, iterator);
    if (asynchronous) {
      this.asynchronous.add(token);
    }
    return { token, release: () => this.release(token) };
  }

  private release(token: number): void {
    const iterator = this.offered.get(token);
    this.asynchronous.delete(token);
    if (iterator !== undefined) {
      this.offered.delete(token);
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    }
  }
}

// section: rpcEnumeratorToken
/** The token of `$/enumerator/next` or `abort`: `[token]` or `{"token": ..}`. */
function rpcEnumeratorToken(args: unknown[]): number | undefined {
  const first = args[0];
  const token = typeof first === "object" && first !== null && "token" in first ? first.token : first;
  return typeof token === "number" ? token : undefined;
}

// section: RPC_BATCH
/** The most values one `$/enumerator/next` answer carries from a synchronous iterable. */
const RPC_BATCH = 64;

// section: RPC_GENERATORS
const RPC_GENERATORS = Symbol.for("jsonrpc-duplex/generators");

// section: rpcGenerators
/** The connection's generators, registered on first use (and shared by every generated module). */
function rpcGenerators(connection: MessageConnection): RpcGenerators {
  const slot = connection as unknown as { [RPC_GENERATORS]?: RpcGenerators };
  let registry = slot[RPC_GENERATORS];
  if (registry === undefined) {
    registry = new RpcGenerators(connection);
    slot[RPC_GENERATORS] = registry;
  }
  return registry;
}

// section: rpcReceived
/** Params as received (vscode-jsonrpc spreads an array), by position. */
function rpcReceived(args: unknown[], structure: ParameterStructures, keys: readonly string[]): unknown[] {
  const [first] = args;
  const byName = typeof first === "object" && first !== null && !Array.isArray(first) && args.length === 1;
  if (structure === ParameterStructures.byName && byName) {
    const object = first as Record<string, unknown>;
    return keys.map((key) => object[key]);
  }
  return args;
}

// section: rpcReporter
/** A progress reporter for the token a caller sent (reports nothing for `null`). */
function rpcReporter<T>(connection: MessageConnection, token: unknown): (report: T) => void {
  if (typeof token !== "string" && typeof token !== "number") {
    return () => undefined;
  }
  return (report: T) => {
    void connection.sendProgress(new ProgressType<T>(), token, report as never).catch(() => undefined);
  };
}

// section: rpcArgumentStream
/** A stream argument the caller offers, pulled as the implementation consumes it. */
function rpcArgumentStream<T>(connection: MessageConnection, enumerable: unknown): AsyncGenerator<T, void, undefined> {
  return rpcPull<T>(connection, async () => (enumerable ?? {}) as RpcEnumerable<T>, []);
}

// section: rpcOfferResult
/** A stream result: offered to the caller, which pulls it. */
async function rpcOfferResult<T>(
  connection: MessageConnection,
  items: AsyncIterable<T> | Iterable<T> | Promise<AsyncIterable<T> | Iterable<T>>,
): Promise<RpcEnumerable<T>> {
  return { token: rpcGenerators(connection).offer(await items).token };
}

// section: rpcNotification
/** Run a notification handler; a failure has no answer to go to, so it is logged. */
function rpcNotification(method: string, run: () => void | Promise<void>): void {
  try {
    const result = run();
    // A handler that returns nothing costs no promise.
    if (result !== undefined) {
      Promise.resolve(result).catch((error: unknown) => console.error(`notification ${method} failed:`, error));
    }
  } catch (error) {
    console.error(`notification ${method} failed:`, error);
  }
}
