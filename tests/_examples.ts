// Paths of the examples that tests run as a user runs them.

/** The path of examples/myapp.ts, the seed's operator. */
export const MYAPP_EXAMPLE = new URL("../examples/myapp.ts", import.meta.url).pathname;
/** The path of examples/myapp-sample.yaml, its sample object. */
export const MYAPP_SAMPLE = new URL("../examples/myapp-sample.yaml", import.meta.url).pathname;
