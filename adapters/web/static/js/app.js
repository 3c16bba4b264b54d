// The chat page: sign in, project picker, sessions sidebar, chat pane, settings.

import { ApiError, BASE, call, login, openStream, readEvents, setToken, token } from "./api.js";
import { TurnView, errorBox, forPeople, renderHistory, userMessage } from "./chat.js";
import { IntentPanel } from "./intent.js";
import { ChatMode } from "./mode.js";
import { PracticePanel } from "./practice.js";
import { LabView } from "./topology.js";

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
  llmConfigured: null, // null: not known yet
};
let lab = null;
let intent = null; // the project's standing intent (IntentPanel)
let practice = null; // the project's troubleshooting drills (PracticePanel)
let mode = null; // the chat's mode switch (ChatMode)

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

// What a turn view needs from the page.
function turnOptions() {
  return {
    onAction: handleAction,
    decide,
    userId: state.user ? state.user.user_id : null,
    onToolEnd: (event) => {
      if (lab) lab.refreshSoon();
      if (practice && event && event.tool_name === "practice_drill") practice.refresh(); // a drill from chat
    },
    undo,
    onRetry: (question) => send(question),
  };
}

// The session a card's action belongs to: the running turn's, else the one shown.
function actionSession() {
  const running = state.streaming;
  return running ? running.context.session : state.session;
}

// "Undo this change" on a tool card: the session's restore points and a rollback.
function restorePoints(rest = "") {
  return chatPath(`/sessions/${encodeURIComponent(actionSession())}/restore-points${rest}`);
}

const undo = {
  async point(id) {
    const points = await guarded(() => call("GET", restorePoints()));
    return points === undefined ? undefined : points.find((p) => p.id === id) || null;
  },
  async preview(id, force) {
    return guarded(() => call("GET", restorePoints(`/${encodeURIComponent(id)}/preview?force=${Boolean(force)}`)));
  },
  async rollBack(id, useSnapshot, force = false) {
    try {
      const path = restorePoints(`/${encodeURIComponent(id)}/rollback?use_snapshot=${useSnapshot}&force=${Boolean(force)}`);
      return await guarded(() => call("POST", path));
    } finally {
      if (lab) lab.refreshSoon(0);
    }
  },
};

async function decide(approvalId, decision, comment, digest) {
  const session = actionSession();
  try {
    await call("POST", chatPath(`/sessions/${session}/approvals/${approvalId}`), digest ? { decision, comment, digest } : { decision, comment });
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 409) return "This change was already decided (perhaps in another tab).";
    if (error instanceof ApiError && error.status === 404) return "This change is no longer waiting for a decision.";
    return `Your decision was not sent: ${forPeople(error.message)}`;
  }
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
        : `Could not sign in: ${forPeople(error.message)}`;
  } finally {
    button.disabled = false;
  }
}

function signOut(message = "") {
  if (state.streaming) state.streaming.controller.abort();
  if (lab) lab.show(null);
  if (intent) intent.show(null);
  if (practice) practice.show(null);
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
  await Promise.all([loadProjects(), loadAgents(), mode.load()]);
}

// ------------------------------------------------------------------ projects
async function loadProjects() {
  let projects;
  try {
    projects = await guarded(() => call("GET", "/projects"));
  } catch (error) {
    notice(`Could not list your GNS3 projects: ${forPeople(error.message)}`, "error");
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

// A button inside a notice.
function actionButton(label, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "link-button";
  button.textContent = label;
  button.addEventListener("click", onClick);
  return button;
}

function openProjectDialog() {
  const dialog = $("project-dialog");
  $("project-form").reset();
  $("project-result").textContent = "";
  $("project-result").dataset.kind = "";
  if (!dialog.open) dialog.showModal();
  $("project-name").focus();
}

async function onCreateProject(event) {
  event.preventDefault();
  const result = $("project-result");
  const name = $("project-name").value.trim();
  if (!name) return;
  result.textContent = "Creating…";
  result.dataset.kind = "";
  try {
    const created = await call("POST", "/projects", { name });
    store.set("project", created.id);
    $("project-dialog").close();
    await loadProjects();
  } catch (error) {
    result.textContent = `Not created: ${forPeople(error.message)}`;
    result.dataset.kind = "error";
  }
}

// Open a closed project in GNS3, then show it.
async function openProject(project) {
  notice(`Opening “${project.name}” in GNS3…`);
  try {
    await call("POST", `/projects/${encodeURIComponent(project.id)}/open`);
  } catch (error) {
    notice(`GNS3 did not open “${project.name}”: ${forPeople(error.message)}`, "error");
    return;
  }
  store.set("project", project.id);
  await loadProjects();
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
  if (lab) lab.show(project);
  if (intent) intent.show(project);
  if (practice) practice.show(project);
  clearSearch();
  store.set("project", project ? project.id : null);
  if (!keepSession) selectSessionId(null);
  $("messages").replaceChildren();
  state.sessions = [];
  renderSessions();
  for (const id of ["message-input", "send", "new-chat"]) $(id).disabled = true;
  if (!project) {
    if (state.projects.length) {
      notice("Pick a GNS3 project to chat about.");
    } else {
      notice("This GNS3 server has no project you can see yet. ", "info");
      $("notice").append(actionButton("Create a project", openProjectDialog));
    }
    return;
  }
  const ready = () => {
    refreshComposer();
    document.body.dataset.project = project.id; // the pane shows this project now
  };
  if (project.status !== "opened") {
    notice(
      `“${project.name}” is ${project.status} in GNS3, so chat is disabled: the copilot reads and ` +
        "changes the running lab, and the project's conversations live with it. ",
      "warning",
    );
    $("notice").append(actionButton("Open the project", () => openProject(project)));
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
  const hello = document.createElement("div");
  hello.className = "empty-chat";
  const line = document.createElement("p");
  line.textContent = `Ask the copilot about “${state.project.name}”: its topology, a change, a fault…`;
  hello.append(line);
  pane.append(hello);
  mode.show(null);
  checkLlm(hello);
}

// The empty chat says so when no language model is configured, and offers the settings.
async function checkLlm(where) {
  if (state.llmConfigured === null) {
    try {
      await call("GET", "/llm-config");
      state.llmConfigured = true;
    } catch (error) {
      state.llmConfigured = error instanceof ApiError && error.status === 404 ? false : null;
    }
  }
  if (state.llmConfigured !== false || !where.isConnected) return;
  const missing = document.createElement("p");
  missing.className = "llm-missing";
  missing.textContent = "No language model is configured for your account yet: choose a provider and a model first. ";
  const open = document.createElement("button");
  open.type = "button";
  open.className = "link-button";
  open.textContent = "Open LLM settings";
  open.addEventListener("click", openSettings);
  missing.append(open);
  where.append(missing);
}

// ------------------------------------------------------------------ agents
const MODE_NAMES = {
  teaching_assistant: "teaching assistant",
  lab_automation_assistant: "lab automation",
};

async function loadAgents() {
  let capabilities = null;
  try {
    capabilities = await call("GET", "/capabilities");
    state.agents = capabilities.agents || [];
  } catch {
    state.agents = [];
  }
  const select = $("agent-select");
  select.replaceChildren(...state.agents.map((a) => new Option(a.name || a.id, a.id)));
  // The settings' "Default" mode says which mode that is.
  const defaultMode = capabilities?.default_copilot_mode;
  if (defaultMode) {
    $("copilot-mode-default").textContent = `Default (${MODE_NAMES[defaultMode] || defaultMode})`;
    mode.fallback = defaultMode;
  }
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
    notice(forPeople(error.message), "error");
    state.sessions = [];
  }
  renderSessions();
}

// ------------------------------------------------------------------ search and export
let searchTimer = null;
let searches = 0;

function clearSearch() {
  $("session-search").value = "";
  $("search-results").hidden = true;
  $("search-results").replaceChildren();
  $("session-list").hidden = false;
}

function onSearchInput() {
  clearTimeout(searchTimer);
  const text = $("session-search").value.trim();
  if (!text) {
    clearSearch();
    return;
  }
  searchTimer = setTimeout(() => runSearch(text), 250);
}

async function runSearch(text) {
  if (!state.project) return;
  const generation = ++searches;
  let found;
  try {
    found = await guarded(() => call("GET", `${chatPath("/search")}?q=${encodeURIComponent(text)}&limit=50`));
  } catch (error) {
    found = null;
    notice(`Could not search: ${forPeople(error.message)}`, "error");
  }
  if (generation !== searches || !found) return;
  const list = $("search-results");
  list.replaceChildren();
  $("session-list").hidden = true;
  list.hidden = false;
  if (!found.length) {
    const none = document.createElement("li");
    none.className = "search-none";
    none.textContent = `No session mentions “${text}”.`;
    list.append(none);
  }
  for (const match of found) {
    const item = document.createElement("li");
    item.className = "session search-hit";
    item.dataset.sessionId = match.session.thread_id;
    const open = document.createElement("button");
    open.type = "button";
    open.className = "session-open";
    const title = document.createElement("span");
    title.className = "session-title";
    title.textContent = match.session.title || "New chat";
    const snippet = document.createElement("span");
    snippet.className = "search-snippet";
    snippet.textContent = match.snippet;
    open.append(title, snippet);
    open.addEventListener("click", () => openSession(match.session.thread_id, { reattach: true }));
    item.append(open);
    list.append(item);
  }
}

async function exportSession(format) {
  if (!state.session) return;
  try {
    const response = await fetch(
      `${BASE}${chatPath(`/sessions/${state.session}/export`)}?format=${format}`,
      { headers: { Authorization: `Bearer ${token()}` } },
    );
    if (!response.ok) throw new ApiError(response.status, `${response.status} ${response.statusText}`);
    const blob = await response.blob();
    const url = URL.createObjectURL(blob);
    const link = document.createElement("a");
    link.href = url;
    link.download = `copilot-session-${state.session}.${format === "json" ? "json" : "md"}`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (error) {
    notice(`Could not export the session: ${forPeople(error.message)}`, "error");
  }
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
    const asked = session.question_count ?? 0;
    count.textContent = `${asked} ${asked === 1 ? "question" : "questions"}`;
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
        notice(`Could not rename: ${forPeople(error.message)}`, "error");
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
    notice(`Could not change the pin: ${forPeople(error.message)}`, "error");
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
      notice(`Could not delete: ${forPeople(error.message)}`, "error");
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
  mode.show(history.copilot_mode);
  if (reattach && (await reattachTurn(id, history))) return;
  await renderHistory($("messages"), history.messages, turnOptions());
  offerEdit();
  $("messages").dataset.state = "saved";
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
        context.finished = true;
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
  $("messages").dataset.state = "streaming";
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

// Show the saved, canonical session (message ids included) once a turn is over.
async function showSaved(id) {
  let saved;
  try {
    saved = await call("GET", chatPath(`/sessions/${id}/history?limit=1000`));
  } catch {
    return;
  }
  if (state.session !== id || state.streaming) return;
  mode.show(saved.copilot_mode);
  // The agent's activity trail is live only (never saved): the finished turn keeps it.
  const lastAnswer = () => [...$("messages").querySelectorAll(".message.assistant")].pop();
  const trail = lastAnswer()?.querySelector(".activity-trail:not([hidden])");
  await renderHistory($("messages"), saved.messages, turnOptions());
  if (trail) lastAnswer()?.querySelector(".activity-trail")?.replaceWith(trail);
  offerEdit();
  $("messages").dataset.state = "saved";
  scrollDown(true);
}

// Edit or ask again: offered on the session's last question while nothing runs.
function offerEdit() {
  const pane = $("messages");
  pane.querySelector(".message-tools")?.remove();
  if (state.streaming || !state.session) return;
  const asked = pane.querySelectorAll(".message.user[data-message-id]");
  const last = asked[asked.length - 1];
  if (!last) return;
  const tools = document.createElement("div");
  tools.className = "message-tools";
  const button = (text, label, onClick) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "link-button";
    b.textContent = text;
    b.setAttribute("aria-label", label);
    b.addEventListener("click", onClick);
    return b;
  };
  const text = last.querySelector(".message-body").textContent;
  tools.append(
    button("Edit", "Edit your last message", () => startEdit(last, text)),
    button("Ask again", "Ask your last message again", () => send({ text, replaceFrom: last.dataset.messageId, from: last })),
  );
  last.after(tools);
}

function startEdit(message, text) {
  const box = document.createElement("div");
  box.className = "edit-box";
  const field = document.createElement("textarea");
  field.value = text;
  field.rows = Math.min(8, text.split("\n").length + 1);
  field.setAttribute("aria-label", "Edit your message");
  const buttons = document.createElement("div");
  buttons.className = "dialog-buttons";
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = "Cancel";
  const save = document.createElement("button");
  save.type = "button";
  save.className = "primary";
  save.textContent = "Send edited message";
  buttons.append(cancel, save);
  box.append(field, buttons);
  message.hidden = true;
  $("messages").querySelector(".message-tools")?.remove();
  message.after(box);
  field.focus();
  cancel.addEventListener("click", () => {
    box.remove();
    message.hidden = false;
    offerEdit();
  });
  const submit = () => {
    if (!field.value.trim()) return;
    box.remove();
    send({ text: field.value, replaceFrom: message.dataset.messageId, from: message });
  };
  save.addEventListener("click", submit);
  field.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    } else if (event.key === "Escape") {
      event.stopPropagation();
      cancel.click();
    }
  });
}

async function send(replay = null) {
  const input = $("message-input");
  const text = replay ? replay.text : input.value;
  if (!text.trim() || state.streaming || !projectOpen()) return;
  const pane = $("messages");
  pane.querySelector(".empty-chat")?.remove();
  pane.querySelector(".message-tools")?.remove();
  if (replay) {
    // The edited (or repeated) question and everything after it give way to the new turn.
    let node = replay.from;
    while (node) {
      const next = node.nextElementSibling;
      node.remove();
      node = next;
    }
  }
  userMessage(pane, text);
  if (!replay) {
    input.value = "";
    autoGrow();
  }
  const turn = new TurnView(pane, turnOptions());
  scrollDown(true);
  const body = { message: text };
  if (state.session) body.session_id = state.session;
  if (replay) body.replace_from = replay.replaceFrom;
  const switched = mode.requested();
  if (switched) body.copilot_mode = switched;
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
    if (!replay) input.value = input.value || text; // keep what was typed
    else turn.note("Nothing was changed: reopen the session to see it as it was.");
    return;
  }
  if (state.session === context.session && context.finished) await showSaved(context.session);
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
  await renderHistory($("messages"), messages.slice(0, lastUser + 1), turnOptions());
  const turn = new TurnView($("messages"), turnOptions());
  scrollDown(true);
  const outcome = await runStream(async () => response, turn, context);
  if (outcome === "done" && state.session === id) await showSaved(id);
  return true;
}

async function stop() {
  const running = state.streaming;
  if (!running || !running.context.session) return;
  $("stop").disabled = true;
  try {
    await call("POST", chatPath(`/sessions/${running.context.session}/abort`));
  } catch (error) {
    notice(`Could not stop: ${forPeople(error.message)}`, "error");
  } finally {
    $("stop").disabled = false;
  }
}

// ------------------------------------------------------------------ settings
const SETTINGS_FIELDS = [
  "provider", "model", "base_url", "temperature", "context_limit", "copilot_mode", "approval",
  "tool_set", "text_tool_calls", "first_token_timeout", "token_timeout", "connect_timeout",
];
const NUMBER_FIELDS = new Set(["temperature", "context_limit", "first_token_timeout", "token_timeout", "connect_timeout"]);

// The models the saved endpoint lists, and the defaults of empty fields.
async function loadModels() {
  const note = $("models-note");
  note.textContent = "Asking your endpoint for its models…";
  let listing;
  try {
    listing = await call("GET", "/llm-config/models");
  } catch (error) {
    note.textContent = `The model list is not available: ${forPeople(error.message)}`;
    return;
  }
  const defaults = listing.defaults || {};
  $("temperature").placeholder =
    defaults.temperature === null || defaults.temperature === undefined ? "provider's default" : `${defaults.temperature} (default)`;
  $("context_limit").placeholder = `${defaults.context_limit} (default)`;
  const options = $("models");
  options.replaceChildren(...(listing.models || []).map((name) => new Option(name, name)));
  note.textContent = listing.available
    ? `Your endpoint offers ${listing.models.length} model${listing.models.length === 1 ? "" : "s"}: pick one from the list or type a name.`
    : `The model list is not available: ${forPeople(listing.reason)}`;
}

// Offer only the modes and approval settings the operator's policy allows this user.
async function applyPolicy() {
  let policy;
  try {
    policy = await call("GET", "/policy");
  } catch {
    return; // the server refuses what is not allowed anyway
  }
  const offer = (select, allowed) => {
    for (const option of select.options) {
      const shown = option.value === "" || allowed.includes(option.value);
      option.hidden = !shown;
      option.disabled = !shown;
    }
  };
  offer($("copilot_mode"), policy.modes || []);
  offer($("approval"), policy.approvals || []);
}

async function openSettings() {
  const dialog = $("settings-dialog");
  const form = $("settings-form");
  form.reset();
  await applyPolicy();
  $("settings-result").textContent = "";
  $("settings-result").dataset.kind = "";
  $("api-key").placeholder = "sk-…";
  try {
    const current = await call("GET", "/llm-config");
    for (const name of SETTINGS_FIELDS) {
      const value = current[name];
      form.elements[name].value = value === null || value === undefined ? "" : String(value);
    }
    if (current.api_key_set) $("api-key").placeholder = "A key is stored; leave empty to keep it";
    $("settings-intro").textContent = "Your LLM settings (stored for your GNS3 account).";
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) {
      $("settings-result").textContent = forPeople(error.message);
    }
    $("settings-intro").textContent =
      "No LLM is configured for your account yet: choose a provider and a model.";
  }
  if (!dialog.open) dialog.showModal();
  form.elements.provider.focus();
  loadModels();
}

function settingsBody() {
  const form = $("settings-form");
  const body = {};
  for (const name of SETTINGS_FIELDS) {
    const raw = form.elements[name].value.trim();
    if (raw === "") continue;
    if (name === "text_tool_calls") body[name] = raw === "true";
    else body[name] = NUMBER_FIELDS.has(name) ? Number(raw) : raw;
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
  $("settings-intro").textContent = "Your LLM settings (stored for your GNS3 account).";
  state.llmConfigured = true;
  document.querySelector(".llm-missing")?.remove();
  mode.own = stored.copilot_mode || null;
  if (!state.session) mode.show(null);
  loadModels();
  return stored;
}

async function onSaveSettings(event) {
  event.preventDefault();
  const result = $("settings-result");
  try {
    await saveSettings();
  } catch (error) {
    result.textContent = `Not saved: ${forPeople(error.message)}`;
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
    result.textContent = `Test failed: ${forPeople(error.message)}`;
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

// ------------------------------------------------------------------ theme
function currentTheme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen) return chosen;
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function showTheme() {
  const dark = currentTheme() === "dark";
  const button = $("theme-toggle");
  button.setAttribute("aria-pressed", String(dark));
  button.title = dark ? "Dark theme (on)" : "Dark theme (off)";
}

function toggleTheme() {
  const next = currentTheme() === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("copilot.theme", next);
  showTheme();
}

function applyStoredTheme() {
  const stored = localStorage.getItem("copilot.theme");
  if (stored === "dark" || stored === "light") document.documentElement.dataset.theme = stored;
  showTheme();
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", showTheme);
}

// ------------------------------------------------------------------ start
// A phone: the topbar wraps (the sidebar slides in below it, however tall it is) and the
// message box's placeholder is the short one.
function fitLayout() {
  const topbar = document.querySelector(".topbar");
  const narrow = window.matchMedia("(max-width: 760px)");
  const input = $("message-input");
  const long = input.placeholder;
  const fit = () => {
    document.documentElement.style.setProperty("--topbar-height", `${topbar.offsetHeight}px`);
    input.placeholder = narrow.matches ? "Message the copilot" : long;
  };
  new ResizeObserver(fit).observe(topbar);
  narrow.addEventListener("change", fit);
  fit();
}

function bind() {
  $("login-form").addEventListener("submit", onLogin);
  $("sign-out").addEventListener("click", () => signOut());
  $("project-select").addEventListener("change", (event) => {
    const project = state.projects.find((p) => p.id === event.target.value) || null;
    if (project && state.project && project.id === state.project.id) return;
    selectProject(project);
  });
  $("refresh-projects").addEventListener("click", loadProjects);
  $("new-project").addEventListener("click", openProjectDialog);
  $("project-form").addEventListener("submit", onCreateProject);
  $("project-cancel").addEventListener("click", () => $("project-dialog").close());
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
  $("theme-toggle").addEventListener("click", toggleTheme);
  $("session-search").addEventListener("input", onSearchInput);
  $("session-search").addEventListener("keydown", (event) => {
    if (event.key === "Escape") clearSearch();
  });
  $("export-markdown").addEventListener("click", () => exportSession("markdown"));
  $("export-json").addEventListener("click", () => exportSession("json"));
}

async function main() {
  applyStoredTheme();
  mode = new ChatMode($("mode-select"), $("mode-note"));
  const expired = () => signOut("Your GNS3 session expired; sign in again.");
  lab = new LabView({ onError: expired });
  intent = new IntentPanel({ onError: expired });
  practice = new PracticePanel({ onError: expired });
  bind();
  fitLayout();
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
