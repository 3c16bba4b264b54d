// The copilot's HTTP API as the page uses it: JSON calls and the SSE reader.
// The GNS3 token lives in sessionStorage only (it goes away with the tab).

export const BASE = "/v3/copilot";

const TOKEN_KEY = "copilot.token";

export class ApiError extends Error {
  constructor(status, detail, body = null) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.detail = detail || `HTTP ${status}`;
    this.body = body; // the service's whole error body ({detail, code, …}), when it sent JSON
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const out = { ...extra };
  const current = token();
  if (current) out.Authorization = `Bearer ${current}`;
  return out;
}

async function detailOf(response) {
  return (await failure(response)).detail;
}

// A failed response as an ApiError: the service's {"detail"} and the rest of its body.
async function failure(response) {
  try {
    const body = await response.json();
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    return new ApiError(response.status, detail, body);
  } catch {
    return new ApiError(response.status, `${response.status} ${response.statusText}`);
  }
}

// One JSON call; throws ApiError with the service's {"detail"} on failure.
export async function call(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(BASE + path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  return response.json();
}

export async function login(username, password) {
  const response = await fetch(`${BASE}/auth/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ username, password }),
  });
  if (!response.ok) throw new ApiError(response.status, await detailOf(response));
  return response.json();
}

// Parse a text/event-stream body: calls onEvent({id, data}) for every event whose
// data is JSON. Resolves when the server closes the stream.
export async function readEvents(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let id = null;
  let data = [];
  const line = (text) => {
    if (text === "") {
      if (data.length) {
        let parsed = null;
        try {
          parsed = JSON.parse(data.join("\n"));
        } catch {
          parsed = null;
        }
        if (parsed) onEvent({ id, data: parsed });
      }
      id = null;
      data = [];
    } else if (text.startsWith("id:")) {
      id = text.slice(3).trim();
    } else if (text.startsWith("data:")) {
      data.push(text.slice(5).replace(/^ /, ""));
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let at;
    while ((at = buffer.indexOf("\n")) >= 0) {
      line(buffer.slice(0, at).replace(/\r$/, ""));
      buffer = buffer.slice(at + 1);
    }
  }
  if (buffer) line(buffer);
  line("");
}

// Open an event stream (POST a turn, or GET the resume URL). Returns the Response
// (status 200 with a body to read, or 204 when there is nothing to re-attach to).
export async function openStream(method, path, { body, lastEventId, signal } = {}) {
  const extra = { Accept: "text/event-stream" };
  if (body !== undefined) extra["Content-Type"] = "application/json";
  if (lastEventId) extra["Last-Event-ID"] = lastEventId;
  const response = await fetch(BASE + path, {
    method,
    headers: headers(extra),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
  });
  if (response.status !== 200 && response.status !== 204) {
    throw new ApiError(response.status, await detailOf(response));
  }
  return response;
}
