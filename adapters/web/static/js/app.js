// The chat page: sign in, project picker, sessions sidebar, chat pane, settings.

import { ApiError, call, login, openStream, readEvents, setToken, token } from "./api.js";
import { TurnView, errorBox, renderHistory, userMessage } from "./chat.js";

const $ = (id) => document.getElementById(id);
const store = {
  get(key) {
    try {
      return JSON.parse(sessionStorage.getItem(`copilot.${key}`));
    } catch {
      return null;
    }
  },
  set(key, value) {
    if (value === null || value === undefined) sessionStorage.removeItem(`copilot.${key}`);
    else sessionStorage.setItem(`copilot.${key}`, JSON.stringify(value));
  },
};

const state = {
  user: null,
  projects: [],
  project: null, // {id, name, status}
  sessions: [],
  session: null, // thread id
  agents: [],
  streaming: null, // {controller, turn, session}
};

// ------------------------------------------------------------------ helpers
function show(view) {
  $("login-view").hidden = view !== "login";
  $("app-view").hidden = view !== "app";
}

function setBusy(busy) {
  document.body.classList.toggle("busy", busy);
  $("send").hidden = busy;
  $("stop").hidden = !busy;
}

function projectOpen() {
  return state.project && state.project.status === "opened";
}

function refreshComposer() {
  const usable = projectOpen();
  $("message-input").disabled = !usable;
  $("send").disabled = !usable;
  $("new-chat").disabled = !usable;
}

function notice(text, kind = "info") {
  const box = $("notice");
  box.replaceChildren();
  box.hidden = !text;
  box.dataset.kind = kind;
  if (text) box.textContent = text;
}

function handleAction(action) {
  if (action === "settings") openSettings();
  else if (action === "refresh") loadProjects();
}

async function guarded(fn) {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      signOut("Your GNS3 session expired; sign in again.");
      return undefined;
    }
    throw error;
  }
}

// ------------------------------------------------------------------ sign in
async function onLogin(event) {
  event.preventDefault();
  const button = $("login-submit");
  $("login-error").textContent = "";
  button.disabled = true;
  try {
    const body = await login($("login-username").value.trim(), $("login-password").value);
    setToken(body.access_token);
    store.set("user", body.user);
    $("login-password").value = "";
    await startApp(body.user);
  } catch (error) {
    $("login-error").textContent =
      error instanceof ApiError && error.status === 401
        ? "GNS3 refused this username or password."
        : `Could not sign in: ${error.message}`;
  } finally {
    button.disabled = false;
  }
}

function signOut(message = "") {
  if (state.streaming) state.streaming.controller.abort();
  sessionStorage.clear();
  state.project = null;
  state.session = null;
  show("login");
  $("login-error").textContent = message;
  $("login-username").focus();
}

async function startApp(user) {
  state.user = user;
  $("user-name").textContent = user.username;
  show("app");
  await Promise.all([loadProjects(), loadAgents()]);
}

// ------------------------------------------------------------------ projects
async function loadProjects() {
  let projects;
  try {
    projects = await guarded(() => call("GET", "/projects"));
  } catch (error) {
    notice(`Could not list your GNS3 projects: ${error.message}`, "error");
    return;
  }
  if (!projects) return;
  state.projects = projects;
  const select = $("project-select");
  select.replaceChildren();
  const placeholder = new Option(projects.length ? "Choose a project…" : "No GNS3 project", "");
  placeholder.disabled = true;
  select.append(placeholder);
  for (const project of projects) {
    const label = project.status === "opened" ? project.name : `${project.name} (${project.status})`;
    select.append(new Option(label, project.id));
  }
  const wanted = store.get("project");
  const chosen =
    projects.find((p) => p.id === wanted) || projects.find((p) => p.status === "opened") || null;
  select.value = chosen ? chosen.id : "";
  await selectProject(chosen, { keepSession: Boolean(chosen && chosen.id === wanted) });
}

let projectLoads = 0;

async function selectProject(project, { keepSession = false } = {}) {
  const generation = ++projectLoads;
  if (state.streaming) {
    state.streaming.controller.abort(); // stop following; the turn goes on server-side
    state.streaming = null;
    setBusy(false);
  }
  delete document.body.dataset.project;
  state.project = project;
  store.set("project", project ? project.id : null);
  if (!keepSession) selectSessionId(null);
  $("messages").replaceChildren();
  state.sessions = [];
  renderSessions();
  for (const id of ["message-input", "send", "new-chat"]) $(id).disabled = true;
  if (!project) {
    notice("Pick a GNS3 project to chat about.");
    return;
  }
  const ready = () => {
    refreshComposer();
    document.body.dataset.project = project.id; // the pane shows this project now
  };
  if (project.status !== "opened") {
    notice(
      `“${project.name}” is ${project.status} in GNS3, so chat is disabled: the copilot reads and ` +
        "changes the running lab, and the project's conversations live with it. Open the project " +
        "in GNS3, then press Refresh.",
      "warning",
    );
    ready();
    return;
  }
  notice("");
  await loadSessions();
  if (generation !== projectLoads) return; // another project was chosen meanwhile
  const saved = store.get("session");
  if (keepSession && saved && state.sessions.some((s) => s.thread_id === saved)) {
    ready();
    await openSession(saved, { reattach: true });
  } else {
    showEmptyChat();
    ready();
  }
}

function showEmptyChat() {
  const pane = $("messages");
  pane.replaceChildren();
  const hello = document.createElement("p");
  hello.className = "empty-chat";
  hello.textContent = `Ask the copilot about “${state.project.name}”: its topology, a change, a fault…`;
  pane.append(hello);
}

// ------------------------------------------------------------------ agents
async function loadAgents() {
  try {
    const capabilities = await call("GET", "/capabilities");
    state.agents = capabilities.agents || [];
  } catch {
    state.agents = [];
  }
  const select = $("agent-select");
  select.replaceChildren(...state.agents.map((a) => new Option(a.name || a.id, a.id)));
  $("agent-field").hidden = state.agents.length < 2;
}

// ------------------------------------------------------------------ sessions
function chatPath(rest = "") {
  return `/projects/${encodeURIComponent(state.project.id)}/chat${rest}`;
}

async function loadSessions() {
  if (!projectOpen()) return;
  try {
    state.sessions = (await guarded(() => call("GET", `${chatPath("/sessions")}?limit=200`))) || [];
  } catch (error) {
    notice(error.message, "error");
    state.sessions = [];
  }
  renderSessions();
}

function selectSessionId(id) {
  state.session = id;
  store.set("session", id);
}

function renderStats() {
  const current = state.sessions.find((s) => s.thread_id === state.session);
  $("session-stats").hidden = !current;
  if (!current) return;
  $("stat-messages").textContent = current.message_count;
  $("stat-llm-calls").textContent = current.llm_calls_count;
  $("stat-input").textContent = current.input_tokens;
  $("stat-output").textContent = current.output_tokens;
  $("stat-total").textContent = current.total_tokens;
}

function iconButton(label, text, onClick, extraClass = "") {
  const button = document.createElement("button");
  button.type = "button";
  button.className = `icon-button ${extraClass}`.trim();
  button.setAttribute("aria-label", label);
  button.title = label;
  button.textContent = text;
  button.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick();
  });
  return button;
}

function renderSessions() {
  const list = $("session-list");
  list.replaceChildren();
  for (const session of state.sessions) {
    const item = document.createElement("li");
    item.className = "session";
    item.dataset.sessionId = session.thread_id;
    if (session.pinned) item.classList.add("pinned");
    if (session.thread_id === state.session) {
      item.classList.add("current");
      item.setAttribute("aria-current", "true");
    }
    const open = document.createElement("button");
    open.type = "button";
    open.className = "session-open";
    const title = document.createElement("span");
    title.className = "session-title";
    title.textContent = `${session.pinned ? "★ " : ""}${session.title || "New chat"}`;
    const count = document.createElement("span");
    count.className = "session-count";
    count.textContent = `${session.message_count} msg`;
    count.setAttribute("aria-label", `${session.message_count} messages`);
    open.append(title, count);
    open.addEventListener("click", () => openSession(session.thread_id, { reattach: true }));
    const actions = document.createElement("span");
    actions.className = "session-actions";
    actions.append(
      iconButton(`Rename “${session.title}”`, "✎", () => startRename(item, session), "rename"),
      iconButton(
        session.pinned ? `Unpin “${session.title}”` : `Pin “${session.title}”`,
        session.pinned ? "Unpin" : "Pin",
        () => togglePin(session),
        "pin",
      ),
      iconButton(`Delete “${session.title}”`, "✕", () => confirmDelete(session), "delete"),
    );
    item.append(open, actions);
    list.append(item);
  }
  renderStats();
}

function startRename(item, session) {
  const input = document.createElement("input");
  input.type = "text";
  input.className = "rename-input";
  input.value = session.title || "";
  input.maxLength = 255;
  input.setAttribute("aria-label", "New session title");
  item.replaceChildren(input);
  input.focus();
  input.select();
  let settled = false;
  const finish = async (save) => {
    if (settled) return;
    settled = true;
    const title = input.value.replace(/\s+/g, " ").trim();
    if (save && title && title !== session.title) {
      try {
        await call("PATCH", chatPath(`/sessions/${session.thread_id}`), { title });
      } catch (error) {
        notice(`Could not rename: ${error.message}`, "error");
      }
    }
    await loadSessions();
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") finish(true);
    else if (event.key === "Escape") finish(false);
  });
  input.addEventListener("blur", () => finish(true));
}

async function togglePin(session) {
  try {
    await call(session.pinned ? "DELETE" : "PUT", chatPath(`/sessions/${session.thread_id}/pin`));
  } catch (error) {
    notice(`Could not change the pin: ${error.message}`, "error");
  }
  await loadSessions();
}

function confirmDelete(session) {
  const dialog = $("confirm-dialog");
  $("confirm-text").textContent =
    `Delete “${session.title}” and its ${session.message_count} messages? This cannot be undone.`;
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "delete") return;
    try {
      await call("DELETE", chatPath(`/sessions/${session.thread_id}`));
    } catch (error) {
      notice(`Could not delete: ${error.message}`, "error");
    }
    if (state.session === session.thread_id) {
      selectSessionId(null);
      showEmptyChat();
    }
    await loadSessions();
  };
  dialog.showModal();
}

function newChat() {
  if (state.streaming) return;
  selectSessionId(null);
  renderSessions();
  showEmptyChat();
  closeSidebar();
  $("message-input").focus();
}

async function openSession(id, { reattach = false } = {}) {
  if (state.streaming) {
    state.streaming.controller.abort(); // stop following; the turn goes on server-side
    state.streaming = null;
    setBusy(false);
  }
  selectSessionId(id);
  renderSessions();
  closeSidebar();
  let history;
  try {
    history = await guarded(() => call("GET", chatPath(`/sessions/${id}/history?limit=1000`)));
  } catch (error) {
    $("messages").replaceChildren(errorBox(error.message, "", handleAction));
    return;
  }
  if (!history) return;
  if (reattach && (await reattachTurn(id, history))) return;
  await renderHistory($("messages"), history.messages, { onAction: handleAction });
  scrollDown(true);
}

// ------------------------------------------------------------------ streaming
function scrollDown(force = false) {
  const pane = $("messages");
  const near = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 160;
  if (force || near) pane.scrollTop = pane.scrollHeight;
}

function remember(project, session, id) {
  if (id) store.set("last-event", { project, session, id });
}

// Follow one stream to its end. Returns "done", "closed" (the connection ended early)
// or "aborted" (we stopped following).
async function follow(response, turn, context) {
  let finished = false;
  try {
    await readEvents(response.body, ({ id, data }) => {
      if (data.type === "heartbeat") return;
      if (data.session_id && !context.session) {
        context.session = data.session_id;
        if (state.project && state.project.id === context.project) {
          selectSessionId(data.session_id);
          loadSessions();
        }
      }
      if (id) {
        context.lastEventId = id;
        remember(context.project, context.session, id);
      }
      if (turn.apply(data)) {
        finished = true;
        // Remember the end of this turn: re-opening the session later asks only for
        // what came after it (204 when nothing did) instead of replaying it.
        store.set("seen", { ...(store.get("seen") || {}), [context.session]: context.lastEventId });
      }
      scrollDown();
    });
  } catch (error) {
    if (context.controller.signal.aborted) return "aborted";
    return "closed";
  }
  return finished ? "done" : "closed";
}

async function runStream(open, turn, context) {
  state.streaming = { controller: context.controller, turn, context };
  setBusy(true);
  let outcome = "closed";
  let response = await open();
  for (let attempt = 0; ; attempt++) {
    if (response.status === 204) {
      outcome = "gone";
      break;
    }
    outcome = await follow(response, turn, context);
    if (outcome !== "closed" || attempt >= 8) break;
    // The connection dropped mid-turn: re-attach after the last event we saw.
    $("connection").hidden = false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** attempt, 4000)));
    try {
      response = await openStream("GET", chatPath(`/sessions/${context.session}/stream`), {
        lastEventId: context.lastEventId,
        signal: context.controller.signal,
      });
    } catch (error) {
      if (context.controller.signal.aborted) {
        outcome = "aborted";
        break;
      }
      response = { status: 0 };
      if (error instanceof ApiError) {
        outcome = "gone";
        break;
      }
    }
  }
  $("connection").hidden = true;
  if (state.streaming && state.streaming.turn === turn) {
    state.streaming = null;
    setBusy(false);
  }
  if (outcome !== "aborted") store.set("last-event", null);
  if (outcome === "gone") {
    await turn.finish();
    if (context.session === state.session) await openSession(context.session);
  } else if (outcome === "closed") {
    await turn.finish();
    turn.note("The connection was lost; the answer may be incomplete. Reopen the session to see it.");
  }
  if (outcome !== "aborted" && state.project && state.project.id === context.project) {
    await loadSessions();
  }
  return outcome;
}

async function send() {
  const input = $("message-input");
  const text = input.value;
  if (!text.trim() || state.streaming || !projectOpen()) return;
  const pane = $("messages");
  pane.querySelector(".empty-chat")?.remove();
  userMessage(pane, text);
  input.value = "";
  autoGrow();
  const turn = new TurnView(pane, { onAction: handleAction });
  scrollDown(true);
  const body = { message: text };
  if (state.session) body.session_id = state.session;
  if (!$("agent-field").hidden && $("agent-select").value) body.agent_id = $("agent-select").value;
  const context = {
    project: state.project.id,
    session: state.session,
    lastEventId: null,
    controller: new AbortController(),
  };
  try {
    await runStream(
      () =>
        openStream("POST", chatPath("/stream"), { body, signal: context.controller.signal }),
      turn,
      context,
    );
  } catch (error) {
    state.streaming = null;
    setBusy(false);
    turn.typing.remove();
    if (error instanceof ApiError && error.status === 401) {
      signOut("Your GNS3 session expired; sign in again.");
      return;
    }
    turn.body.append(errorBox(error.message, "", handleAction));
    input.value = input.value || text; // keep what was typed
  }
}

// After a reload (or when opening a session): follow its running turn, if any.
async function reattachTurn(id, history) {
  const context = {
    project: state.project.id,
    session: id,
    lastEventId: null,
    controller: new AbortController(),
  };
  let response;
  try {
    // A turn this page saw end is asked for after its last event (204: nothing new).
    // Otherwise (a reload mid-turn: the page lost what it had shown) the whole running
    // turn is replayed from its first event.
    response = await openStream("GET", chatPath(`/sessions/${id}/stream`), {
      lastEventId: (store.get("seen") || {})[id] || null,
      signal: context.controller.signal,
    });
  } catch {
    return false;
  }
  if (response.status !== 200) return false;
  // The running turn's user message is saved already; its later steps arrive replayed.
  const messages = history.messages;
  let lastUser = messages.length - 1;
  while (lastUser >= 0 && messages[lastUser].role !== "user") lastUser--;
  await renderHistory($("messages"), messages.slice(0, lastUser + 1), { onAction: handleAction });
  const turn = new TurnView($("messages"), { onAction: handleAction });
  scrollDown(true);
  const outcome = await runStream(async () => response, turn, context);
  if (outcome === "done" && state.session === id) {
    // Show the saved, canonical turn.
    const saved = await call("GET", chatPath(`/sessions/${id}/history?limit=1000`));
    await renderHistory($("messages"), saved.messages, { onAction: handleAction });
    scrollDown(true);
  }
  return true;
}

async function stop() {
  const running = state.streaming;
  if (!running || !running.context.session) return;
  $("stop").disabled = true;
  try {
    await call("POST", chatPath(`/sessions/${running.context.session}/abort`));
  } catch (error) {
    notice(`Could not stop: ${error.message}`, "error");
  } finally {
    $("stop").disabled = false;
  }
}

// ------------------------------------------------------------------ settings
const SETTINGS_FIELDS = ["provider", "model", "base_url", "temperature", "context_limit", "copilot_mode"];

async function openSettings() {
  const dialog = $("settings-dialog");
  const form = $("settings-form");
  form.reset();
  $("settings-result").textContent = "";
  $("settings-result").dataset.kind = "";
  $("api-key").placeholder = "sk-…";
  try {
    const current = await call("GET", "/llm-config");
    for (const name of SETTINGS_FIELDS) {
      const value = current[name];
      form.elements[name].value = value === null || value === undefined ? "" : value;
    }
    if (current.api_key_set) $("api-key").placeholder = "A key is stored; leave empty to keep it";
    $("settings-intro").textContent = "Your LLM settings (stored for your GNS3 account).";
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) {
      $("settings-result").textContent = error.message;
    }
    $("settings-intro").textContent =
      "No LLM is configured for your account yet: choose a provider and a model.";
  }
  if (!dialog.open) dialog.showModal();
  form.elements.provider.focus();
}

function settingsBody() {
  const form = $("settings-form");
  const body = {};
  for (const name of SETTINGS_FIELDS) {
    const raw = form.elements[name].value.trim();
    if (raw === "") continue;
    body[name] = name === "temperature" || name === "context_limit" ? Number(raw) : raw;
  }
  const key = $("api-key").value;
  if (key) body.api_key = key;
  return body;
}

async function saveSettings() {
  const result = $("settings-result");
  const stored = await call("PUT", "/llm-config", settingsBody());
  $("api-key").value = "";
  if (stored.api_key_set) $("api-key").placeholder = "A key is stored; leave empty to keep it";
  result.textContent = `Saved: ${stored.provider} / ${stored.model}.`;
  result.dataset.kind = "ok";
  return stored;
}

async function onSaveSettings(event) {
  event.preventDefault();
  const result = $("settings-result");
  try {
    await saveSettings();
  } catch (error) {
    result.textContent = `Not saved: ${error.message}`;
    result.dataset.kind = "error";
  }
}

async function onTestSettings() {
  const result = $("settings-result");
  const button = $("settings-test");
  button.disabled = true;
  result.textContent = "Saving and testing…";
  result.dataset.kind = "";
  try {
    await saveSettings();
    const answer = await call("POST", "/llm-config/test");
    result.textContent = `Connection OK: the model answered in ${Math.round(answer.latency_ms)} ms.`;
    result.dataset.kind = "ok";
  } catch (error) {
    result.textContent = `Test failed: ${error.message}`;
    result.dataset.kind = "error";
  } finally {
    button.disabled = false;
  }
}

// ------------------------------------------------------------------ layout
function closeSidebar() {
  document.body.classList.remove("sidebar-open");
  $("sidebar-toggle").setAttribute("aria-expanded", "false");
}

function toggleSidebar() {
  const open = document.body.classList.toggle("sidebar-open");
  $("sidebar-toggle").setAttribute("aria-expanded", String(open));
}

function autoGrow() {
  const input = $("message-input");
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}

// ------------------------------------------------------------------ start
function bind() {
  $("login-form").addEventListener("submit", onLogin);
  $("sign-out").addEventListener("click", () => signOut());
  $("project-select").addEventListener("change", (event) => {
    const project = state.projects.find((p) => p.id === event.target.value) || null;
    if (project && state.project && project.id === state.project.id) return;
    selectProject(project);
  });
  $("refresh-projects").addEventListener("click", loadProjects);
  $("new-chat").addEventListener("click", newChat);
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  $("message-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  $("message-input").addEventListener("input", autoGrow);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.streaming && !document.querySelector("dialog[open]")) {
      event.preventDefault();
      stop();
    }
  });
  $("stop").addEventListener("click", stop);
  $("open-settings").addEventListener("click", openSettings);
  $("settings-form").addEventListener("submit", onSaveSettings);
  $("settings-test").addEventListener("click", onTestSettings);
  $("settings-close").addEventListener("click", () => $("settings-dialog").close());
  $("sidebar-toggle").addEventListener("click", toggleSidebar);
}

async function main() {
  bind();
  if (!token()) {
    show("login");
    $("login-username").focus();
    return;
  }
  try {
    const user = await call("GET", "/me");
    await startApp(user);
  } catch (error) {
    signOut(error instanceof ApiError && error.status === 401 ? "" : error.message);
  }
}

main();
