"""What a model reads before its first token: the system prompt, the tool schemas and the
lab's state, in tokens, for the full and the compact tool set (issue 30).

Run: ``python -m tests.benchmarks.bench_prompt_tokens``. It prints figures; it asserts
nothing (tests/adapters/llm/test_small_models.py holds the 2,500-token bound).

Tokens are counted with tiktoken's cl100k_base (shipped with the package), each tool as
the JSON object an OpenAI-compatible request carries; a model's own tokenizer counts a
little differently. The prompts are the built-in ones with the built-in skills' platform
guides (for the platforms present); the tools are the GNS3 tools of each mode
(``Gns3ToolExecutor`` specs: nothing is sent to GNS3). Two labs: an empty one, and ten
nodes (four VPCS, four FRR routers, two switches) in a chain, in the shape the
topology source gives the model. The system prompt is the one built for each tool set
(it names only the tools offered). The compact set is shown for an everyday message
("Add two VPCS PCs named PC1 and PC2") and for one that cues six rarer tools.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from adapters.gns3 import Gns3Client, SkillLibrary
from adapters.gns3.tools._executor import Gns3ToolExecutor
from adapters.llm import TiktokenTokenCounter
from copilot_core import CopilotMode, PromptBook, ToolSpec
from copilot_core._compact import compact_tools
from entrypoints.skills import platform_guides

EVERYDAY = "Add two VPCS PCs named PC1 and PC2"
RARER = "Capture packets on R1-R2, add delay, take a snapshot, delete PC4, undo, add a note"


def ten_node_lab() -> dict[str, Any]:
    kinds = [("PC", "vpcs", "vpcs", 1)] * 4 + [("R", "dynamips", "frr", 4)] * 4
    kinds += [("SW", "ethernet_switch", "generic", 8)] * 2
    nodes: list[dict[str, Any]] = []
    counters: dict[str, int] = {}
    for prefix, node_type, device_type, ports in kinds:
        counters[prefix] = counters.get(prefix, 0) + 1
        name = f"{prefix}{counters[prefix]}"
        nodes.append(
            {
                "name": name,
                "node_type": node_type,
                "device_type": device_type,
                "status": "started",
                "ports": [{"name": f"eth{i}", "in_use": i < 2} for i in range(ports)],
                "console": f"telnet://127.0.0.1:{5000 + len(nodes)}",
            }
        )
    links = [
        {"ends": [{"node": a["name"], "port": "eth1"}, {"node": b["name"], "port": "eth0"}]}
        for a, b in itertools.pairwise(nodes)
    ]
    project = {"name": "bench", "project_id": "0" * 8, "status": "opened"}
    return {"project": project, "nodes": nodes, "links": links}


def tokens_of_tools(counter: TiktokenTokenCounter, specs: list[ToolSpec]) -> int:
    return sum(counter.count_text(json.dumps(spec.to_openai())) for spec in specs)


def main() -> None:
    counter = TiktokenTokenCounter()
    book = PromptBook(platforms=platform_guides(SkillLibrary()))
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    labs = {"empty lab": {"nodes": [], "links": []}, "10-node lab": ten_node_lab()}
    print(
        f"{'mode':<25} {'tool set':<18} {'tools':>5} {'tool tok':>8} {'system':>6} "
        f"{'sys+tools':>9} {'lab':<12} {'lab tok':>7} {'total':>6}"
    )
    for mode in CopilotMode:
        every = list(executor.specs(mode))
        sets = {
            "full": every,
            "compact everyday": compact_tools(every, EVERYDAY),
            "compact rarer": compact_tools(every, RARER),
        }
        for name, specs in sets.items():
            tools = tokens_of_tools(counter, specs)
            # The system prompt names only the tools the request offers (issue 40).
            system = counter.count_text(book.system(mode, specs))
            for lab_name, topology in labs.items():
                lab = counter.count_text(
                    PromptBook.with_lab(EVERYDAY, book.lab(topology, None, specs))
                )
                print(
                    f"{mode.value:<25} {name:<18} {len(specs):>5} {tools:>8} {system:>6} "
                    f"{system + tools:>9} {lab_name:<12} {lab:>7} {system + tools + lab:>6}"
                )
    largest = sorted(
        ((tokens_of_tools(counter, [s]), s.name) for s in executor.specs(mode)), reverse=True
    )[:5]
    print("\nlargest full schemas:", ", ".join(f"{name} {n}" for n, name in largest))


if __name__ == "__main__":
    main()
