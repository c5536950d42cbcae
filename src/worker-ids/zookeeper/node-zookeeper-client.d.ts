// The parts of node-zookeeper-client@1.1.3 (pure JS, no types of its own) that frond uses.
declare module 'node-zookeeper-client' {
  namespace zookeeper {
    /** 64-bit fields (mtime, ephemeralOwner, …) arrive as 8-byte big-endian buffers. */
    interface Stat {
      czxid: Buffer;
      mzxid: Buffer;
      ctime: Buffer;
      mtime: Buffer;
      version: number;
      cversion: number;
      aversion: number;
      ephemeralOwner: Buffer;
      dataLength: number;
      numChildren: number;
      pzxid: Buffer;
    }

    interface Exception extends Error {
      getCode(): number;
      getName(): string;
    }

    interface State {
      name: string;
      code: number;
    }

    interface Transaction {
      create(path: string, data?: Buffer | null, mode?: number): Transaction;
      setData(path: string, data: Buffer | null, version?: number): Transaction;
      check(path: string, version?: number): Transaction;
      remove(path: string, version?: number): Transaction;
      commit(callback: (error: Exception | null, results: unknown[]) => void): void;
    }

    interface Client {
      connect(): void;
      close(): void;
      on(event: 'connected' | 'disconnected' | 'expired', listener: () => void): Client;
      on(event: 'state', listener: (state: State) => void): Client;
      once(event: 'connected' | 'disconnected' | 'expired', listener: () => void): Client;
      removeListener(event: string, listener: (...args: never[]) => void): Client;
      getSessionId(): Buffer;
      getSessionTimeout(): number;
      getState(): State;
      create(
        path: string,
        data: Buffer | null,
        mode: number,
        callback: (error: Exception | null, path: string) => void,
      ): void;
      mkdirp(path: string, callback: (error: Exception | null, path: string) => void): void;
      remove(path: string, version: number, callback: (error: Exception | null) => void): void;
      exists(path: string, callback: (error: Exception | null, stat: Stat | null) => void): void;
      getData(
        path: string,
        callback: (error: Exception | null, data: Buffer | null, stat: Stat) => void,
      ): void;
      setData(
        path: string,
        data: Buffer | null,
        version: number,
        callback: (error: Exception | null, stat: Stat) => void,
      ): void;
      getChildren(
        path: string,
        callback: (error: Exception | null, children: string[], stat: Stat) => void,
      ): void;
      transaction(): Transaction;
    }

    interface ClientOptions {
      sessionTimeout?: number;
      spinDelay?: number;
      retries?: number;
    }
  }

  const zookeeper: {
    createClient(connectionString: string, options?: zookeeper.ClientOptions): zookeeper.Client;
    CreateMode: {
      PERSISTENT: number;
      EPHEMERAL: number;
      PERSISTENT_SEQUENTIAL: number;
      EPHEMERAL_SEQUENTIAL: number;
    };
    Exception: {
      NO_NODE: number;
      NODE_EXISTS: number;
      SESSION_EXPIRED: number;
      CONNECTION_LOSS: number;
      BAD_VERSION: number;
      NOT_EMPTY: number;
    };
  };
  export = zookeeper;
}
