// The JavaScript half of src/web/http_sink.rs: a POST that never throws and
// always settles, and a beacon that never throws.

// Resolves to [status, retryAfter or null]; rejects with a sentence when no
// answer came (refused, reset, blocked, or nothing within timeoutMs).
export function guard_post(url, body, headers, keepalive, timeoutMs) {
  try {
    const controller = typeof AbortController === "function" ? new AbortController() : null;
    const init = {
      method: "POST",
      body,
      keepalive,
      credentials: "omit",
      headers: { "content-type": "application/json" },
    };
    for (let i = 0; i + 1 < headers.length; i += 2) init.headers[headers[i]] = headers[i + 1];
    if (controller) init.signal = controller.signal;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (controller) controller.abort();
    }, timeoutMs);
    return fetch(url, init).then(
      (response) => {
        clearTimeout(timer);
        // Read and dropped, so that the connection is free again.
        response.arrayBuffer().catch(() => {});
        return [response.status, response.headers.get("retry-after")];
      },
      (error) => {
        clearTimeout(timer);
        throw timedOut
          ? `no answer within ${timeoutMs} ms`
          : `no answer: ${(error && error.message) || String(error)}`;
      },
    );
  } catch (error) {
    return Promise.reject(`fetch threw: ${(error && error.message) || String(error)}`);
  }
}

// The page-hide request: a `keepalive` fetch, which the browser sends even
// after the page is gone, without the user's cookies (`sendBeacon` would send
// them to a same-site collector), with the sink's headers. Whether the browser
// took it: a keepalive body over the browser's quota is refused at once.
export function guard_beacon(url, body, headers) {
  try {
    const init = {
      method: "POST",
      body,
      keepalive: true,
      credentials: "omit",
      headers: { "content-type": "application/json" },
    };
    for (let i = 0; i + 1 < headers.length; i += 2) init.headers[headers[i]] = headers[i + 1];
    fetch(url, init).then(
      (response) => { response.arrayBuffer().catch(() => {}); },
      () => {},
    );
    return true;
  } catch (error) {
    return false;
  }
}

// Why `url` cannot be posted to ("" when it can): not a URL, or not http(s).
export function guard_check_url(url) {
  try {
    const parsed = new URL(url, globalThis.location ? globalThis.location.href : undefined);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      return `the scheme is ${parsed.protocol}, not http: or https:`;
    }
    return "";
  } catch (error) {
    return `not a URL (${(error && error.message) || String(error)})`;
  }
}
