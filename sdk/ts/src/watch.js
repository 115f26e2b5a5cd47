// watchTask: a task's events as an async iterable that goes on after a
// broken stream, from the last event handed on (docs/sdk-typescript.md).

import { StewardError, isRetryable, toStewardError } from "./client.js";

/**
 * watchTask yields the task's events (EventRecord messages) after
 * opts.afterSequence (0: from its first), in order, past and then new,
 * until the caller leaves the for-await loop or opts.signal aborts.
 *
 * A stream that breaks — reset, cut off, unavailable, or ended by the
 * server — is opened again from the last event yielded, so each event
 * comes once and none is lost. Breaks in a row are retried with the
 * client's backoff up to its maxAttempts; a stream that reached Steward
 * again (its first message, the live mark) starts the count anew. Any
 * other error is thrown at once as a StewardError. opts.onLive(lastSequence)
 * is called each time a stream opens.
 */
export async function* watchTask(client, taskId, opts = {}) {
  const { signal, onLive, retry, sleep } = opts;
  let after = BigInt(opts.afterSequence ?? 0);
  let failures = 0;
  let backoff = retry.initialBackoffMs;
  for (;;) {
    // One controller per stream: leaving the loop early, or the caller's
    // signal, closes the stream under it.
    const stream = new AbortController();
    const stop = () => stream.abort(signal.reason);
    signal?.addEventListener("abort", stop);
    let err;
    try {
      for await (const msg of client.query.watchTask({ taskId, afterSequence: after }, { signal: stream.signal })) {
        if (!msg.record) {
          failures = 0;
          backoff = retry.initialBackoffMs;
          onLive?.(msg.lastSequence);
          continue;
        }
        yield msg.record;
        after = msg.record.sequence;
      }
      err = new StewardError("unavailable", `the watch of task ${taskId} ended`);
    } catch (e) {
      if (signal?.aborted || !(isRetryable(e) || isCutShort(e))) throw toStewardError(e);
      err = toStewardError(e);
    } finally {
      stream.abort();
      signal?.removeEventListener("abort", stop);
    }
    if (++failures >= retry.maxAttempts) throw err;
    await sleep(backoff);
    backoff = Math.min(backoff * 2, retry.maxBackoffMs);
  }
}

// isCutShort says whether err is a stream that stopped before its end
// message: connect-node reports it as a protocol error, not a network one.
function isCutShort(err) {
  for (let e = err, seen = 0; e instanceof Error && seen < 10; e = e.cause, seen++) {
    if (/premature close|missing EndStreamResponse|unexpected end|terminated/i.test(e.message)) return true;
  }
  return false;
}
