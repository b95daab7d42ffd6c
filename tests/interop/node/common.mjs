// What the interop scripts share: each takes a JSON array of specs (each with an `id`) as its one
// argument, runs them one after the other, and prints one JSON object per spec on a line of its
// own, in order (tests/interop/nodejs.py reads them). Nothing else goes to stdout.

/** Run `one(spec)` for every spec of argv[2] and print each result, `{id, ...result}`. */
export async function main(one) {
  const specs = JSON.parse(process.argv[2]);
  for (const spec of specs) {
    let result;
    try {
      result = await one(spec);
    } catch (error) {
      result = { thrown: describeError(error) };
    }
    process.stdout.write(JSON.stringify({ id: spec.id, ...result }) + "\n");
  }
}

/** What a client's error says, without what differs between two servers (URLs, headers). */
export function describeError(error) {
  if (error == null || typeof error !== "object") {
    return { value: String(error) };
  }
  const out = { name: error.name, message: error.message };
  for (const key of ["statusCode", "responseBody", "isRetryable", "data", "reason"]) {
    if (error[key] !== undefined) {
      out[key] = error[key];
    }
  }
  if (error.cause != null && error.cause !== error) {
    out.cause = describeError(error.cause);
  }
  if (Array.isArray(error.errors)) {
    out.errors = error.errors.map(describeError);
  }
  if (error.lastError != null) {
    out.lastError = describeError(error.lastError);
  }
  return out;
}
