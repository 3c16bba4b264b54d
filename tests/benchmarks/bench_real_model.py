"""The copilot with a real small model: everyday requests on a real GNS3, then ``eval``.

Run (root, Docker, the router lab's image; about an hour on 2 cores)::

    tests/benchmarks/real_model.sh build          # once: weights + llama-server (cached)
    python -m tests.benchmarks.bench_real_model   # --quick: 3 requests, 2 eval tasks

It prints a table and writes ``bench_real_model.json`` (with the request log of the model
server, the SSE events of every turn, and the logs of the service and of llama-server)
into ``--out`` (``.cache/bench_real_model``). It asserts nothing; it exits non-zero only
when it broke (2: the machine cannot run it).

What runs, all on 127.0.0.1, and is stopped at the end (also on Ctrl-C, SIGTERM or a
failure):

1. **The model**: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp's ``llama-server``
   (``real_model.sh serve``: the model's stock chat template, ``--jinja``, 2 threads,
   ``--metrics``), or one already answering ``/health`` on ``--port`` (then left running).
   Between the copilot and it a recording proxy (:mod:`tests.benchmarks.model_proxy`)
   keeps each request, its first-token time and the server's usage with its cached prompt
   tokens (the product does not see those); a hang-up passes through.
2. **The lab**: the router lab (:class:`tests.lab.router_lab.RouterLab`: a real
   gns3-server 3.0.6, Docker nodes behind a uBridge stand-in), under its lock
   ``/tmp/router-lab.lock``. VPCS cannot start on these machines (no uBridge, no VPCS
   binary), so the PCs are its "Linux host" Docker nodes: they really start, take an
   address and ping each other, and the bench reads them with ``docker exec``.
3. **The product**: ``gns3-copilot serve`` (``python -m entrypoints serve``, a subprocess)
   with the admin's LLM settings as docs/llm.md documents them for a small local model:
   ``openai_compatible``, ``tool_set: compact``, ``first_token_timeout: 1200``,
   ``temperature: 0``. The bench talks to it as the page does: ``POST …/chat/stream``
   read as SSE, every change card approved (with its digest).
4. **The requests** (:mod:`tests.benchmarks.real_model_requests`): eight everyday requests
   of a new user in two sessions, each judged by the lab's real state and a structured
   check of its answer; per request: right or wrong and why, seconds to the first token
   (the first ``content`` or ``tool_call`` event) and to ``done``, LLM calls (the
   session's counter), tool calls, prompt and cached prompt tokens (the model server's
   usage), false claims (an answer stating output no tool of its turn produced).
5. **``gns3-copilot eval``** against the same model (through the proxy) with the same
   settings, ``--temperature 0 --trials 1 --max-llm-calls 8``, in its simulated lab
   (``--eval-lab gns3``: scratch projects on the lab's gns3-server, where its VPCS tasks
   that need a started node are errors); its table is printed and kept.

``--scripted`` replaces the model by the scripted OpenAI-compatible server playing a
capable model (:func:`~tests.benchmarks.real_model_requests.scripted_model`): a check of
the bench itself in a few minutes, where every request should be judged right.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import connect_sse

from tests.benchmarks.model_proxy import ProxiedCall, RecordingProxy
from tests.benchmarks.real_model_requests import (
    REQUESTS,
    Request,
    TurnFacts,
    false_claims,
    ping_truth,
    read_state,
    repair,
    scripted_model,
)
from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.lifeline import die_with_parent
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, LabUnavailableError, RouterLab

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().with_name("real_model.sh")
LAB_LOCK = Path("/tmp/router-lab.lock")
MODEL = "qwen2.5-coder-1.5b-instruct"
SERVER_ARGS = "-c 32768 -np 2 -kvu -t 2 --jinja --metrics"
#: The documented small-model settings (docs/llm.md, "Small local models").
SETTINGS: dict[str, Any] = {
    "provider": "openai_compatible",
    "model": MODEL,
    "tool_set": "compact",
    "first_token_timeout": 1200,
    "temperature": 0,
}
#: A turn still running after this is aborted (the first-token bound, plus tools).
TURN_BOUND = 1800.0


# ============================================================================ the model
class ModelServer:
    """``real_model.sh serve`` on ``port``, or the server already answering there."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.origin = f"http://127.0.0.1:{port}"
        self.reused = False
        self._process: subprocess.Popen[bytes] | None = None

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.origin}/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, within: float = 600.0) -> ModelServer:
        if self.healthy():
            self.reused = True
            return self
        with self.log.open("wb") as sink:
            self._process = subprocess.Popen(
                ["bash", str(SCRIPT), "serve"],
                env={**os.environ, "PORT": str(self.port)},
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        deadline = time.monotonic() + within
        while not self.healthy():
            if self._process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"llama-server exited ({self._process.returncode}):\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server not healthy within {within:g} s; see {self.log}")
            time.sleep(1)
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def server_facts(origin: str) -> dict[str, Any]:
    """What the model server says of itself (``/props``), its template's fingerprint."""
    try:
        props = httpx.get(f"{origin}/props", timeout=10).json()
    except (httpx.HTTPError, ValueError):
        return {}
    template = str(props.get("chat_template") or "")
    path = str(props.get("model_path") or "")
    facts = {
        "model_path": path,
        "model_bytes": Path(path).stat().st_size if path and Path(path).exists() else None,
        "build_info": props.get("build_info"),
        "total_slots": props.get("total_slots"),
        "n_ctx": (props.get("default_generation_settings") or {}).get("n_ctx"),
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest()[:16],
        "chat_template_has_tools": "tool_call" in template,
    }
    quant = re.search(r"(q\d_k_[ms]|q\d_\d|f16|bf16)", path.lower())
    facts["quantisation"] = quant.group(1).upper() if quant else None
    return facts


def metrics(origin: str) -> dict[str, float]:
    """llama-server's Prometheus counters (``--metrics``), ``llamacpp:`` names."""
    try:
        text = httpx.get(f"{origin}/metrics", timeout=10).text
    except httpx.HTTPError:
        return {}
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:"):
            name, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                found[name.removeprefix("llamacpp:")] = float(value)
    return found


# ============================================================================ a turn
@dataclass
class Turn:
    """One request's SSE stream as the page would read it."""

    session_id: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    first_s: float | None = None
    total_s: float = 0.0
    message_id: str | None = None
    aborted_by_bench: bool = False

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    def evidence(self) -> list[dict[str, Any]]:
        """The events without growing tool calls, content merged into runs."""
        kept: list[dict[str, Any]] = []
        for event in self.events:
            kind = event.get("type")
            if kind == "tool_call" and not event["tool_call"]["function"].get("complete"):
                continue
            if kind == "content" and kept and kept[-1].get("type") == "content":
                kept[-1] = {**kept[-1], "content": kept[-1]["content"] + event["content"]}
                continue
            kept.append({k: v for k, v in event.items() if k != "session_id"})
        return kept


class Chat:
    """The user at the page: sends a message, approves every change card."""

    def __init__(self, api: httpx.Client, project: str) -> None:
        self.api, self.project = api, project

    def turn(self, message: str, mode: str, session_id: str | None) -> Turn:
        body: dict[str, Any] = {"message": message, "copilot_mode": mode}
        if session_id is not None:
            body["session_id"] = session_id
        turn = Turn(session_id=session_id)
        began = time.monotonic()
        url = f"/projects/{self.project}/chat/stream"
        with connect_sse(self.api, "POST", url, json=body) as source:
            if source.response.status_code != 200:
                source.response.read()
                raise RuntimeError(f"stream refused: {source.response.status_code} "
                                   f"{source.response.text}")  # fmt: skip
            turn.session_id = source.response.headers.get("x-session-id") or session_id
            for sse in source.iter_sse():
                data = json.loads(sse.data)
                kind = data.get("type")
                if kind == "heartbeat":
                    self._bound(turn, began)
                    continue
                data["t"] = round(time.monotonic() - began, 2)
                turn.events.append(data)
                if kind in ("content", "tool_call") and turn.first_s is None:
                    turn.first_s = time.monotonic() - began
                elif kind == "approval_required":
                    self._approve(turn, data)
                elif kind == "done":
                    turn.message_id = data.get("message_id")
                self._bound(turn, began)
        turn.total_s = time.monotonic() - began
        return turn

    def _approve(self, turn: Turn, event: dict[str, Any]) -> None:
        decided = self.api.post(
            f"/projects/{self.project}/chat/sessions/{event['session_id']}"
            f"/approvals/{event['approval_id']}",
            json={"decision": "approve", "digest": event.get("digest")},
        )
        if decided.status_code != 200:
            turn.events.append({"type": "bench_note", "note": f"approval: {decided.text}"})

    def _bound(self, turn: Turn, began: float) -> None:
        if turn.aborted_by_bench or time.monotonic() - began < TURN_BOUND:
            return
        turn.aborted_by_bench = True
        self.api.post(f"/projects/{self.project}/chat/sessions/{turn.session_id}/abort")

    def history(self, session_id: str) -> dict[str, Any]:
        url = f"/projects/{self.project}/chat/sessions/{session_id}/history"
        got = self.api.get(url, params={"limit": 1000})
        got.raise_for_status()
        history: dict[str, Any] = got.json()
        return history


# ============================================================================ a row
@dataclass
class Row:
    request: Request
    right: bool = False
    why: str = ""
    first_s: float | None = None
    total_s: float = 0.0
    llm_calls: int = 0
    title_calls: int = 0
    tool_calls: int = 0
    tool_statuses: list[str] = field(default_factory=list)
    #: Calls of the turn made again with the same tool and arguments.
    repeats: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    server_first_token_s: float | None = None
    false_claims: list[str] = field(default_factory=list)
    unverified_mark: bool = False
    errors: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    repaired: list[str] = field(default_factory=list)
    answer: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "request"}
        data.update(key=self.request.key, session=self.request.session,
                    mode=self.request.mode, message=self.request.message)  # fmt: skip
        return data


def _tool_outputs(turn: Turn) -> list[tuple[str, str, Any]]:
    found = []
    for end in turn.kinds("tool_end"):
        try:
            output = json.loads(end.get("tool_output") or "null")
        except ValueError:
            output = end.get("tool_output")
        found.append((str(end.get("tool_name")), str(end.get("status")), output))
    return found


def _marked_unverified(message: dict[str, Any]) -> bool:
    """Whether the product marked the answer as stating unseen output (any metadata key
    that says so: the mark is another change of issue 40)."""
    return "unverified" in json.dumps(message.get("metadata") or {}).lower()


@dataclass
class Bench:
    chat: Chat
    project: LabProject
    templates: dict[str, str]
    proxy: RecordingProxy
    log: list[dict[str, Any]] = field(default_factory=list)

    def run(self, request: Request, session_id: str | None) -> tuple[Row, str | None]:
        row = Row(request)
        row.repaired = repair(self.project, self.templates, HOST_TEMPLATE, request.needs)
        before = read_state(self.project, self.templates)
        counters = self.chat.history(session_id) if session_id else {}
        mark = len(self.proxy.calls)
        print(f"  [{request.key}] {request.message}", flush=True)
        turn = self.chat.turn(request.message, request.mode, session_id)
        session_id = turn.session_id
        assert session_id is not None
        history = self.chat.history(session_id)
        after = read_state(self.project, self.templates)
        final = next(
            (m for m in history["messages"] if m.get("id") == turn.message_id),
            {"content": "", "metadata": {}},
        )
        facts = TurnFacts(str(final.get("content") or ""), _tool_outputs(turn), before, after)
        if request.key == "ping":
            facts.reachable = ping_truth(self.project)
        verdict = request.judge(facts, HOST_TEMPLATE)
        calls = self.proxy.calls_since(mark)
        agent = [c for c in calls if not c.is_title]
        row.right, row.why = verdict.right, verdict.why
        row.first_s, row.total_s = turn.first_s, turn.total_s
        row.llm_calls = int(history.get("llm_calls") or 0) - int(counters.get("llm_calls") or 0)
        row.title_calls = len(calls) - len(agent)
        row.tool_calls = len(facts.tools)
        row.tool_statuses = [f"{name}:{status}" for name, status, _ in facts.tools]
        made = [
            (e["tool_call"]["function"]["name"], e["tool_call"]["function"]["arguments"])
            for e in turn.kinds("tool_call")
            if e["tool_call"]["function"].get("complete")
        ]
        row.repeats = len(made) - len(set(made))
        row.prompt_tokens = sum(c.prompt_tokens for c in agent)
        row.cached_tokens = sum(c.cached_tokens for c in agent)
        row.completion_tokens = sum(c.completion_tokens for c in agent)
        row.server_first_token_s = agent[0].first_token_s if agent else None
        row.false_claims = false_claims(facts)
        row.unverified_mark = _marked_unverified(final)
        row.errors = [f"{e.get('code')}: {e.get('error')}" for e in turn.kinds("error")]
        if turn.aborted_by_bench:
            row.errors.append(f"aborted by the bench after {TURN_BOUND:g} s")
        for status in turn.kinds("status"):
            name = str(status.get("status"))
            row.statuses[name] = row.statuses.get(name, 0) + 1
        row.answer = facts.answer
        self.log.append(
            {
                "key": request.key,
                "message": request.message,
                "row": row.to_json(),
                "before": before.to_json(),
                "after": after.to_json(),
                "reachable": facts.reachable,
                "events": turn.evidence(),
                "final_message": final,
                "model_calls": [c.index for c in calls],
            }
        )
        mark_text = "RIGHT" if row.right else "wrong"
        print(f"      {mark_text}: {row.why} ({row.total_s:.0f} s)", flush=True)
        return row, session_id


# ============================================================================ eval
def run_eval(
    proxy: RecordingProxy,
    out: Path,
    quick: bool,
    lab: RouterLab | None,
    trials: int,
    faults: list[str] | None = None,
) -> dict[str, Any]:
    """``gns3-copilot eval`` against the proxy; its table (stdout) and its JSON. With
    ``faults`` (fault ids; ``[]``: the whole catalog) ``--suite faults`` in scratch labs of
    the router lab (``lab``), built from each fault's shape."""
    target = out / ("eval_faults.json" if faults is not None else "eval.json")
    argv = [
        sys.executable, "-m", "entrypoints", "eval", "--base-url", proxy.base_url,
        "--model", MODEL, "--provider", SETTINGS["provider"], "--tool-set", SETTINGS["tool_set"],
        "--first-token-timeout", str(SETTINGS["first_token_timeout"]), "--temperature", "0",
        "--trials", str(trials), "--max-llm-calls", "8", "--json", str(target),
    ]  # fmt: skip
    if faults is not None:
        assert lab is not None, "the faults suite runs in the router lab"
        argv += ["--suite", "faults", "--template", f"frr={ROUTER_TEMPLATE}"]
        argv += ["--template", f"linux={HOST_TEMPLATE}"]
        for fault in faults:
            argv += ["--fault", fault]
    elif quick:
        argv += ["--task", "empty-lab", "--task", "build"]
    if lab is not None:
        argv += ["--gns3-url", lab.url, "--gns3-token", lab.server.token()]
    mark = len(proxy.calls)
    began = time.monotonic()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        preexec_fn=die_with_parent(signal.SIGTERM),
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            print(f"    eval | {line.rstrip()}", flush=True)
            lines.append(line.rstrip("\n"))
        process.wait()
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
    calls = [c for c in proxy.calls_since(mark) if not c.is_title]
    scores = json.loads(target.read_text()) if target.exists() else None
    return {
        "argv": [a if not a.startswith("eyJ") else "<token>" for a in argv],
        "exit_status": process.returncode,
        "seconds": round(time.monotonic() - began, 1),
        "output": lines,
        "scores": scores,
        "model_calls": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "cached_tokens": sum(c.cached_tokens for c in calls),
    }


# ============================================================================ report
def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def print_table(rows: list[Row]) -> None:
    head = (
        f"{'#':>2} {'s':>1} {'request':8} {'right':5} {'1st tok s':>9} {'total s':>7} "
        f"{'LLM':>3} {'tools':>5} {'prompt':>7} {'cached':>7} {'false':>5} {'mark':>4}  why"
    )
    print(head)
    print("-" * len(head))
    for number, row in enumerate(rows, 1):
        print(
            f"{number:>2} {row.request.session:>1} {row.request.key:8} "
            f"{'yes' if row.right else 'NO':5} {_s(row.first_s):>9} {row.total_s:>7.0f} "
            f"{row.llm_calls:>3} {row.tool_calls:>5} {row.prompt_tokens:>7} "
            f"{row.cached_tokens:>7} {'yes' if row.false_claims else 'no':>5} "
            f"{'U' if row.unverified_mark else '-':>4}  {row.why[:90]}"
        )
        for claim in row.false_claims:
            print(f"{'':>9}false claim: {claim}")
        for error in row.errors:
            print(f"{'':>9}error: {error[:200]}")
        if row.repaired:
            print(f"{'':>9}premise made by the bench first: {', '.join(row.repaired)}")


def summary(rows: list[Row], calls: list[ProxiedCall]) -> dict[str, Any]:
    prompt = sum(c.prompt_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    return {
        "right": sum(r.right for r in rows),
        "requests": len(rows),
        "answers_with_false_claims": sum(bool(r.false_claims) for r in rows),
        "false_claims_marked_unverified": sum(
            bool(r.false_claims) and r.unverified_mark for r in rows
        ),
        "model_calls": len(calls),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": round(cached / prompt, 3) if prompt else None,
        "repeated_calls": sum(r.repeats for r in rows),
        "hung_up_calls": sum(c.hung_up for c in calls),
    }


# ============================================================================ main
@contextlib.contextmanager
def lab_lock() -> Iterator[None]:
    """The router lab's lock: one lab run at a time on this machine."""
    with LAB_LOCK.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for {LAB_LOCK} (another router-lab run)", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _keep(source: Path, target: Path) -> None:
    if source.exists():
        shutil.copy(source, target)


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run(args: argparse.Namespace, out: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    began = time.monotonic()
    if args.lab_port_base is None:
        stack.enter_context(lab_lock())
    if args.scripted:
        upstream = stack.enter_context(ScriptedOpenAIServer(default=scripted_model)).origin
        model_server: ModelServer | None = None
    else:
        model_server = ModelServer(args.port, out / "llama-server.log")
        stack.callback(model_server.stop)
        print(f"llama-server on port {args.port}: starting or reusing", flush=True)
        upstream = model_server.start().origin
    facts = {} if args.scripted else server_facts(upstream)
    before = {} if args.scripted else metrics(upstream)
    proxy = stack.enter_context(RecordingProxy(upstream))
    lab = RouterLab(args.lab_port_base)
    stack.callback(lab.stop)
    print("router lab: starting (Docker, gns3-server with the Linux host template)", flush=True)
    lab.start()
    token = lab.server.token()
    project = LabProject(lab, token, lab.server.new_project("bench-real-model", token))
    stack.callback(project.delete)
    root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-real-model-")))
    stack.callback(_keep, root / "service.log", out / "service.log")  # once it stopped
    env = {"COPILOT_GNS3_TIMEOUT": "120"}  # Docker nodes take seconds to create and start
    service: ServedCopilot = stack.enter_context(serve_copilot(lab.url, root, env=env))
    api = stack.enter_context(service.api(token))
    api.timeout = httpx.Timeout(120.0)  # heartbeats every 15 s keep a long turn's stream
    stored = api.put("/llm-config", json={**SETTINGS, "base_url": proxy.base_url})
    stored.raise_for_status()
    print(f"settings: {stored.json()}", flush=True)
    bench = Bench(Chat(api, project.project), project, lab.templates, proxy)
    rows: list[Row] = []
    sessions: dict[int, str | None] = {}
    for request in REQUESTS:
        if args.no_requests or (args.quick and not request.quick):
            continue
        row, sessions[request.session] = bench.run(request, sessions.get(request.session))
        rows.append(row)
    requests_calls = proxy.calls
    evaluation = faults_eval = None
    if not args.no_eval:
        print("gns3-copilot eval against the same model:", flush=True)
        evaluation = run_eval(
            proxy, out, args.quick, lab if args.eval_lab == "gns3" else None, args.trials
        )
    if args.faults is not None:
        print("gns3-copilot eval --suite faults against the same model:", flush=True)
        faults_eval = run_eval(proxy, out, args.quick, lab, args.trials, args.faults)
    with (out / "requests.jsonl").open("w") as log:
        for call in proxy.calls:
            log.write(json.dumps(call.to_json(proxy.origin_time), ensure_ascii=False) + "\n")
    with (out / "turns.jsonl").open("w") as log:
        for entry in bench.log:
            log.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return {
        "model": {
            "name": "Qwen2.5-Coder-1.5B-Instruct" if not args.scripted else "scripted",
            "alias": MODEL,
            "server": "llama.cpp llama-server (llama-cpp-python 0.3.36's vendor/llama.cpp)",
            "server_args": SERVER_ARGS,
            "template": "the model's stock chat template (--jinja)",
            "reused_server": bool(model_server and model_server.reused),
            **facts,
        },
        "settings": SETTINGS,
        "lab": "router lab: real gns3-server 3.0.6, Linux host Docker nodes, uBridge stand-in",
        "quick": args.quick,
        "rows": [row.to_json() for row in rows],
        "summary": summary(rows, [c for c in requests_calls if not c.is_title]),
        "all_calls": summary([], proxy.calls),
        "metrics": {"before": before, "after": {} if args.scripted else metrics(upstream)},
        "eval": evaluation,
        "eval_faults": faults_eval,
        "cpu": {"cores": os.cpu_count(), "load_at_end": os.getloadavg()[0]},
        "seconds": round(time.monotonic() - began, 1),
        "_rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 requests, 2 eval tasks")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8089")))
    parser.add_argument("--out", type=Path, default=ROOT / ".cache" / "bench_real_model")
    parser.add_argument("--scripted", action="store_true", help="the bench's own check")
    parser.add_argument("--no-eval", action="store_true", help="skip gns3-copilot eval")
    parser.add_argument("--eval-lab", choices=["simulated", "gns3"], default="simulated")
    parser.add_argument("--trials", type=int, default=1, help="eval --trials")
    parser.add_argument("--no-requests", action="store_true", help="skip the requests")
    parser.add_argument(
        "--lab-port-base",
        type=int,
        default=None,
        metavar="PORT",
        help="run the router lab beside another lab run, without its lock: GNS3's console "
        "and UDP ports from PORT (not 27000), on a Docker daemon no lab run owns",
    )
    parser.add_argument(
        "--faults",
        nargs="*",
        default=None,
        metavar="ID",
        help="also run eval --suite faults in the router lab: these faults (none named: "
        "the whole catalog, with its healthy cases)",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with contextlib.ExitStack() as stack:
            result = run(args, args.out, stack)
    except LabUnavailableError as exc:
        print(f"bench_real_model: the router lab cannot run here: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench_real_model: interrupted; everything it started is stopped", file=sys.stderr)
        return 130
    rows: list[Row] = result.pop("_rows")
    model = result["model"]
    print(
        f"\n{model['name']} {model.get('quantisation') or ''} on llama-server "
        f"({model['template']}; {model['server_args']}); settings {json.dumps(SETTINGS)}; "
        f"run {result['seconds']:.0f} s"
    )
    print_table(rows)
    total = result["summary"]
    print(
        f"right {total['right']}/{total['requests']}; answers with a false claim "
        f"{total['answers_with_false_claims']} (marked unverified by the product: "
        f"{total['false_claims_marked_unverified']}); "
        f"{total['model_calls']} model calls, prompt tokens {total['prompt_tokens']}, of "
        f"them cached {total['cached_tokens']} ({(total['cached_share'] or 0) * 100:.0f} %)"
    )
    for key in ("eval", "eval_faults"):
        evaluation = result[key]
        if evaluation is None:
            continue
        print(
            f"{key}: exit {evaluation['exit_status']}, {evaluation['seconds']:.0f} s, "
            f"{evaluation['model_calls']} model calls, prompt {evaluation['prompt_tokens']}, "
            f"cached {evaluation['cached_tokens']}"
        )
    target = args.out / "bench_real_model.json"
    target.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"written: {target} (and requests.jsonl, turns.jsonl, the logs, in {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
