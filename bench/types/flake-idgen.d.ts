// flake-idgen 1.4.0 ships no types; this is the synchronous part the benchmark calls.
declare module 'flake-idgen' {
  interface FlakeIdOptions {
    id?: number;
    datacenter?: number;
    worker?: number;
    epoch?: number;
  }
  class FlakeId {
    constructor(options?: FlakeIdOptions);
    /** An 8-byte big-endian ID; throws once 4096 IDs were made in the current millisecond. */
    next(): Buffer;
  }
  export default FlakeId;
}
